#include "sandbox/compiler.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/files.h"
#include "common/scrub_secrets.h"
#include "common/sha256.h"
#include "sandbox/cubin_state.h"
#include "sandbox/device_code_rules.h"
#include "sandbox/include_policy.h"

#ifndef KOPT_CUDA_HOME
#define KOPT_CUDA_HOME "/usr/local/cuda"
#endif

namespace kopt {
namespace {

// Owns an nvrtcProgram.
class NvrtcProgram {
 public:
  explicit NvrtcProgram(nvrtcProgram program) : program_(program) {}
  ~NvrtcProgram() {
    if (program_) nvrtcDestroyProgram(&program_);
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_;
};

Error nvrtc_error(const char* call, nvrtcResult result) {
  return make_error(std::string(call) + " failed: " + nvrtcGetErrorString(result));
}

}  // namespace

bool is_valid_arch(const std::string& arch) {
  std::smatch m;
  if (!std::regex_match(arch, m, std::regex("sm_([0-9]{2,3})a?"))) return false;
  return std::stoi(m[1]) >= 50;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::filesystem::path cuda_home() {
  if (const char* v = std::getenv("CUDA_HOME"); v && *v) return v;
  return KOPT_CUDA_HOME;
}

std::vector<std::string> compile_options(const CompileRequest& request) {
  std::vector<std::string> options = {
      "-arch=" + request.arch,
      "--std=c++17",
      "-lineinfo",
      "--ptxas-options=-v",
      // NVRTC searches only the include roots below, never the (fictional) folder of the source.
      "--no-source-include",
  };
  // The toolkit headers (cuda_bf16.h, mma.h, CUB) are not found by NVRTC without these; they
  // are also the only roots check_includes lets a source name.
  for (const auto& root : toolkit_include_roots())
    options.push_back("--include-path=" + root.string());
  // Toolkit headers that include a neighbour by a quoted relative name (crt/mma.h includes
  // "mma.hpp"): with --no-source-include NVRTC finds the neighbour only through these folders.
  // They come after the roots, so a name both hold resolves as check_includes resolved it.
  for (const auto& folder : toolkit_header_folders())
    options.push_back("--include-path=" + folder.string());
  for (const auto& [name, value] : request.defines)
    options.push_back("-D" + name + "=" + std::to_string(value));
  for (const auto& o : request.extra_options) options.push_back(o);
  return options;
}

std::filesystem::path CompileCache::entry_path(const std::string& key) const {
  return dir_ / key.substr(0, 2) / (key + ".json");
}

std::optional<CompileOutput> CompileCache::lookup(const std::string& key) const {
  auto text = read_file(entry_path(key));
  if (!text) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(*text);
    CompileOutput out;
    out.ok = j.at("ok").get<bool>();
    out.log = j.at("log").get<std::string>();
    if (out.ok) {
      // A truncated or damaged CUBIN must not reach the GPU: it is checked against its digest.
      auto bin = read_file(dir_ / key.substr(0, 2) / (key + ".cubin"));
      if (!bin || sha256_hex(*bin) != j.at("cubin_sha256").get<std::string>()) return std::nullopt;
      out.cubin = std::move(*bin);
    }
    out.lowered_names = j.at("lowered_names").get<std::map<std::string, std::string>>();
    out.key = key;
    out.cache_hit = true;
    return out;
  } catch (const std::exception&) {
    return std::nullopt;  // a corrupt entry is a miss; the next store replaces it
  }
}

void CompileCache::store(const CompileOutput& output) const {
  nlohmann::json j = {{"ok", output.ok},
                      {"log", scrub_secrets(output.log)},
                      {"lowered_names", output.lowered_names},
                      {"cubin_sha256", sha256_hex(output.cubin)},
                      {"nvrtc", nvrtc_version()}};
  // The CUBIN goes first so a reader never finds metadata without its binary.
  if (output.ok &&
      !write_file_atomic(dir_ / output.key.substr(0, 2) / (output.key + ".cubin"), output.cubin))
    return;
  (void)write_file_atomic(entry_path(output.key), j.dump());
}

std::string compile_cache_key(const CompileRequest& request) {
  // The gate's version: a rule added after the compile (the device heap's refusal) must not be
  // bypassed by an older cached "ok".
  std::string key_material = "nvrtc " + nvrtc_version() + "\ngate 2\n";
  for (const auto& o : compile_options(request)) key_material += o + "\n";
  for (const auto& k : request.kernel_names) key_material += "kernel " + k + "\n";
  key_material += request.source;
  return sha256_hex(key_material);
}

Result<CompileOutput> compile_kernel(const CompileRequest& request, const CompileCache* cache) {
  if (!is_valid_arch(request.arch))
    return make_error("invalid architecture '" + request.arch + "' (expected e.g. sm_90a)");
  std::vector<std::string> options = compile_options(request);
  std::string key = compile_cache_key(request);
  // Before any cache or NVRTC: a refused include is never opened, and its refusal is not cached
  // (it is cheap, and a cached log must never depend on what a file held).
  if (auto refused = check_includes(request.source, request.origin, toolkit_include_roots())) {
    CompileOutput out;
    out.key = key;
    out.log = *refused;
    return out;
  }
  // Device code only (sandbox/device_code_rules.h): refused before NVRTC reads it, not cached.
  std::set<std::string> defined_outside;
  for (const auto& [name, value] : request.defines) defined_outside.insert(name);
  if (auto rule = check_device_code_only(request.source, request.origin, defined_outside); !rule) {
    CompileOutput refused;
    refused.key = key;
    refused.log = rule.error() + "\n";
    return refused;
  }
  if (cache) {
    if (auto hit = cache->lookup(key)) return *hit;
  }

  auto start = std::chrono::steady_clock::now();
  nvrtcProgram raw = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&raw, request.source.c_str(), request.origin.c_str(), 0,
                                      nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcCreateProgram", rc);
  NvrtcProgram program(raw);
  // Name expressions let NVRTC tell us the symbol of each kernel, extern "C" or not.
  for (const auto& name : request.kernel_names) {
    rc = nvrtcAddNameExpression(program.get(), ("&" + name).c_str());
    if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcAddNameExpression", rc);
  }
  std::vector<std::string> all_options = options;
  if (request.use_pch) all_options.push_back("-pch");
  std::vector<const char*> option_ptrs;
  for (const auto& o : all_options) option_ptrs.push_back(o.c_str());
  nvrtcResult compile_rc =
      nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());

  CompileOutput out;
  out.key = key;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(program.get(), &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(program.get(), out.log.data());
    out.log.resize(log_size - 1);
    // With --ptxas-options=-v NVRTC appends ptxas' log after a NUL of its own; a NUL in the
    // middle would end the log early for C readers and shows as \u0000 in JSON.
    std::erase(out.log, '\0');
    // The -pch notice ("using precompiled header file ...") is noise for a reader of the log.
    std::string kept;
    for (size_t line_start = 0; line_start < out.log.size();) {
      size_t end = out.log.find('\n', line_start);
      if (end == std::string::npos) end = out.log.size();
      std::string line = out.log.substr(line_start, end - line_start);
      if (line.find("precompiled header file") == std::string::npos) kept += line + "\n";
      line_start = end + 1;
    }
    // A log can quote what the compiler read (an include's text): keys never leave it.
    out.log = scrub_secrets(kept);
  }
  if (compile_rc == NVRTC_SUCCESS) {
    size_t cubin_size = 0;
    rc = nvrtcGetCUBINSize(program.get(), &cubin_size);
    if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetCUBINSize", rc);
    out.cubin.resize(cubin_size);
    rc = nvrtcGetCUBIN(program.get(), out.cubin.data());
    if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetCUBIN", rc);
    size_t ptx_size = 0;
    if (nvrtcGetPTXSize(program.get(), &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
      out.ptx.resize(ptx_size);
      if (nvrtcGetPTX(program.get(), out.ptx.data()) == NVRTC_SUCCESS) {
        out.ptx.resize(ptx_size - 1);  // without its NUL
      } else {
        out.ptx.clear();
      }
    }
    out.ok = true;
    for (const auto& name : request.kernel_names) {
      const char* lowered = nullptr;
      rc = nvrtcGetLoweredName(program.get(), ("&" + name).c_str(), &lowered);
      if (rc != NVRTC_SUCCESS || !lowered) {
        out.ok = false;
        out.log += "\nkernel '" + name + "' was not found after compilation";
        break;
      }
      out.lowered_names[name] = lowered;
    }
    // The device heap outlives a launch and no check of the worker sees it: a kernel could keep
    // an answer there between timed samples. Plans declare scratch (zeroed or poisoned per run).
    if (out.ok) {
      auto state = read_cubin_state(out.cubin);
      if (!state) {
        out.ok = false;
        out.log += "\nthe compiled CUBIN could not be read: " + state.error();
      } else if (state->uses_device_heap) {
        out.ok = false;
        out.log += "\n" + request.origin +
                   ": device-side malloc/free/new is not supported (the device heap outlives a "
                   "launch); declare the memory as plan scratch instead";
      }
    }
    if (!out.ok) out.cubin.clear();
  } else if (compile_rc != NVRTC_ERROR_COMPILATION) {
    return nvrtc_error("nvrtcCompileProgram", compile_rc);
  }
  out.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count();
  if (cache) cache->store(out);
  return out;
}

}  // namespace kopt

#include "sandbox/kernel_file.h"

namespace kopt {

CompileRequest make_compile_request(const KernelFile& file,
                                    const std::map<std::string, int64_t>& tunables,
                                    const std::string& arch) {
  CompileRequest request;
  request.source = file.source;
  request.origin = std::filesystem::path(file.origin).filename().string();
  request.arch = arch;
  request.defines = file.tunable_values(tunables);
  request.extra_options = file.compile_options;
  for (const auto& launch : file.launches) {
    if (std::find(request.kernel_names.begin(), request.kernel_names.end(), launch.kernel) ==
        request.kernel_names.end())
      request.kernel_names.push_back(launch.kernel);
  }
  return request;
}

}  // namespace kopt
