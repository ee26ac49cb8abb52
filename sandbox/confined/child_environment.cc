#include "sandbox/confined/child_environment.h"

#include <sys/resource.h>

#include <algorithm>

#include "common/scrub_secrets.h"

namespace kopt {
namespace {

std::vector<std::string> without_secrets(std::vector<std::string> entries) {
  std::erase_if(entries, [](const std::string& entry) {
    return is_secret_name(entry.substr(0, entry.find('=')));
  });
  return entries;
}

}  // namespace

bool is_secret_name(const std::string& name) { return is_secret_variable_name(name); }

std::vector<std::string> worker_environment() {
  return without_secrets(environment_subset({
      "PATH",
      "HOME",
      "USER",
      "LOGNAME",
      "LANG",
      "LC_*",
      "TZ",
      "TMPDIR",
      "LD_LIBRARY_PATH",
      "LD_PRELOAD",  // compute-sanitizer and profilers inject themselves this way
      "XDG_CACHE_HOME",
      "XDG_DATA_HOME",
      "CUDA_*",  // CUDA_VISIBLE_DEVICES, CUDA_HOME, CUDA_INJECTION64_PATH, ...
      "NVIDIA_*",
      "NV_*",
      "CUPTI_*",
      "COMPUTE_SANITIZER_*",
      "__NV_*",
      "NVTX_*",
      "SLURM_*",  // srun inside an allocation
      "KOPT_*",
  }));
}

std::vector<std::string> compiler_environment() {
  return without_secrets(environment_subset(
      {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "CUDA_HOME", "LD_LIBRARY_PATH", "TMPDIR"}));
}

std::vector<ResourceLimit> worker_limits() {
  return {{RLIMIT_CORE, 0, std::nullopt},
          {RLIMIT_FSIZE, 4ull << 30, std::nullopt},
          {RLIMIT_NOFILE, 4096, std::nullopt}};
}

}  // namespace kopt
