// The compile gate: NVRTC compiles a kernel file to a CUBIN for one architecture. A compile error
// is a normal outcome (ok=false with the log), never an exception. Results are cached on disk,
// content-addressed by source, options, architecture and NVRTC version.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

struct CompileRequest {
  std::string source;
  std::string origin;                      // file name shown in the log
  std::string arch = "sm_90a";             // sm_XX[a]
  std::map<std::string, int64_t> defines;  // tunables, passed as -DNAME=VALUE
  std::vector<std::string> extra_options;  // already checked against the allow-list
  std::vector<std::string> kernel_names;   // __global__ functions to look up
  bool use_pch = false;                    // NVRTC automatic PCH (long-lived worker only)
};

struct CompileOutput {
  bool ok = false;
  std::string log;
  std::string cubin;
  std::string ptx;  // the PTX NVRTC made on the way (not cached; `kopt export` ships it)
  std::map<std::string, std::string> lowered_names;  // kernel -> symbol in the CUBIN
  bool cache_hit = false;
  double millis = 0;
  std::string key;
};

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::optional<CompileOutput> lookup(const std::string& key) const;
  void store(const CompileOutput& output) const;  // best effort: a full disk only loses the cache
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path entry_path(const std::string& key) const;
  std::filesystem::path dir_;
};

// NVRTC's version as "13.0".
std::string nvrtc_version();

// The CUDA toolkit root (CUDA_HOME, else the one kopt was built against).
std::filesystem::path cuda_home();

// The full NVRTC option list for a request (also the cache key's input).
std::vector<std::string> compile_options(const CompileRequest& request);

// The cache key: NVRTC's version, the options, the kernels and the source.
std::string compile_cache_key(const CompileRequest& request);

// Compiles (or fetches from `cache` when non-null). Errors are infrastructure failures only.
Result<CompileOutput> compile_kernel(const CompileRequest& request, const CompileCache* cache);

// True for sm_XX or sm_XXa with XX >= 50.
bool is_valid_arch(const std::string& arch);
// The NVRTC target of a compute capability: "sm_XY", plus "a" from Hopper on (wgmma and
// setmaxnreg need the architecture-specific target). The one place this rule lives.
std::string arch_of_compute_capability(int major, int minor);
// The same from "9.0" (the device JSON's "cc"); "" when the text is not a compute capability.
std::string arch_of_compute_capability(const std::string& compute_capability);

}  // namespace kopt

namespace kopt {
struct KernelFile;
// The compile request for a parsed kernel file with the given tunable values (defaults if empty).
CompileRequest make_compile_request(const KernelFile& file,
                                    const std::map<std::string, int64_t>& tunables,
                                    const std::string& arch);
}  // namespace kopt
