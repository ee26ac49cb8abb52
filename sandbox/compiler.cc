#include "sandbox/compiler.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/files.h"
#include "common/scrub_secrets.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "sandbox/cubin_state.h"
#include "sandbox/device_code_rules.h"
#include "sandbox/include_policy.h"
#include "sandbox/toolkit_headers.h"

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

std::string arch_of_compute_capability(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major >= 9 ? "a" : "");
}

std::string arch_of_compute_capability(const std::string& compute_capability) {
  size_t dot = compute_capability.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= compute_capability.size()) return "";
  std::string major = compute_capability.substr(0, dot), minor = compute_capability.substr(dot + 1);
  if ((major + minor).find_first_not_of("0123456789") != std::string::npos || major.size() > 2 ||
      minor.size() > 1)
    return "";
  return arch_of_compute_capability(std::stoi(major), std::stoi(minor));
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
      // NVRTC searches no folder at all: the toolkit headers come in memory
      // (sandbox/toolkit_headers.h), so no include can make it open or probe a file.
      "--no-source-include",
  };
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
  // The toolkit's folder: its headers are part of every compile, in memory.
  std::string key_material =
      "nvrtc " + nvrtc_version() + "\ngate 3\ntoolkit " + cuda_home().string() + "\n";
  for (const auto& o : compile_options(request)) key_material += o + "\n";
  for (const auto& k : request.kernel_names) key_material += "kernel " + k + "\n";
  key_material += request.source;
  return sha256_hex(key_material);
}

namespace {

// The name NVRTC knows every program by, wherever it came from: __FILE__ and the line
// information in the CUBIN and PTX hold it, so a verified kernel and its export (TASK.cu,
// compiled in another folder) get the same bytes. Absolute, so NVRTC prepends no working
// directory (the exporting user's folder once shipped in every PTX).
constexpr const char* kProgramName = "/kopt/kernel.cu";

// The gate before NVRTC: includes from the toolkit only, no definition of a name a toolkit
// header computes an include from, device code only. Refusals are not cached: they are cheap,
// and a cached log must never depend on what a file held.
std::optional<std::string> gate_refusal(const CompileRequest& request,
                                        const ToolkitHeaderSet& headers) {
  if (auto refused = check_includes(request.source, request.origin, toolkit_include_roots()))
    return refused;
  std::set<std::string> defined_outside;
  for (const auto& [name, value] : request.defines) defined_outside.insert(name);
  if (auto refused =
          check_include_macro_names(request.source, request.origin, defined_outside, headers))
    return refused;
  if (auto rule = check_device_code_only(request.source, request.origin, defined_outside); !rule)
    return rule.error() + "\n";
  return std::nullopt;
}

bool is_caret_line(const std::string& line) {
  return line.find('^') != std::string::npos && line.find_first_not_of(" \t^") == std::string::npos;
}

// NVRTC's log as the candidate may see it: the -pch notice dropped (noise), the program's name
// shown as the source's origin, and no line quoted from any other file. A diagnostic located in
// a header quotes that header's line; only the candidate's own text is quoted back, whatever
// file a compile may once have opened.
std::string readable_log(const std::string& raw, const std::string& origin) {
  std::vector<std::string> lines = split(raw, '\n');
  if (lines.back().empty()) lines.pop_back();
  std::string kept;
  const std::string own = std::string(kProgramName) + "(";
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (line.find("precompiled header file") != std::string::npos) continue;
    for (size_t at = line.find(kProgramName); at != std::string::npos;
         at = line.find(kProgramName, at + origin.size()))
      line.replace(at, std::strlen(kProgramName), origin);
    kept += line + "\n";
    // "FILE(LINE): error: ..." then the quoted line and its caret.
    size_t paren = lines[i].find("): ");
    bool located = paren != std::string::npos && lines[i].find('(') < paren &&
                   lines[i].find_first_of(" \t") > lines[i].find('(');
    if (located && lines[i].rfind(own, 0) != 0 && i + 2 < lines.size() &&
        is_caret_line(lines[i + 2])) {
      kept += "  (a line of a toolkit header, not shown)\n";
      i += 2;
    }
  }
  return kept;
}

// The log NVRTC left: ptxas' part comes after a NUL of its own, which would end the log early
// for C readers and shows as \u0000 in JSON.
std::string program_log(nvrtcProgram program, const std::string& origin) {
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(program, &log_size) != NVRTC_SUCCESS || log_size <= 1) return "";
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  log.resize(log_size - 1);
  std::erase(log, '\0');
  // A log can quote what the compiler read: keys never leave it.
  return scrub_secrets(readable_log(log, origin));
}

// The CUBIN, the PTX and each kernel's lowered name of a successful compile.
Status read_images(nvrtcProgram program, const CompileRequest& request, CompileOutput& out) {
  size_t cubin_size = 0;
  nvrtcResult rc = nvrtcGetCUBINSize(program, &cubin_size);
  if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetCUBINSize", rc);
  out.cubin.resize(cubin_size);
  rc = nvrtcGetCUBIN(program, out.cubin.data());
  if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetCUBIN", rc);
  size_t ptx_size = 0;
  if (nvrtcGetPTXSize(program, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
    out.ptx.resize(ptx_size);
    if (nvrtcGetPTX(program, out.ptx.data()) == NVRTC_SUCCESS) {
      out.ptx.resize(ptx_size - 1);  // without its NUL
    } else {
      out.ptx.clear();
    }
  }
  out.ok = true;
  for (const auto& name : request.kernel_names) {
    const char* lowered = nullptr;
    rc = nvrtcGetLoweredName(program, ("&" + name).c_str(), &lowered);
    if (rc != NVRTC_SUCCESS || !lowered) {
      out.ok = false;
      out.log += "\nkernel '" + name + "' was not found after compilation";
      return ok_status();
    }
    out.lowered_names[name] = lowered;
  }
  return ok_status();
}

// The device heap outlives a launch and no check of the worker sees it: a kernel could keep an
// answer there between timed samples. Plans declare scratch (zeroed or poisoned per run).
void refuse_device_heap(const CompileRequest& request, CompileOutput& out) {
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

Result<CompileOutput> run_nvrtc(const CompileRequest& request, const ToolkitHeaderSet& headers) {
  std::vector<const char*> header_texts, header_names;
  for (size_t i = 0; i < headers.names.size(); ++i) {
    header_names.push_back(headers.names[i].c_str());
    header_texts.push_back(headers.contents[i]->c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&raw, request.source.c_str(), kProgramName,
                                      static_cast<int>(header_names.size()), header_texts.data(),
                                      header_names.data());
  if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcCreateProgram", rc);
  NvrtcProgram program(raw);
  // Name expressions let NVRTC tell us the symbol of each kernel, extern "C" or not.
  for (const auto& name : request.kernel_names) {
    rc = nvrtcAddNameExpression(program.get(), ("&" + name).c_str());
    if (rc != NVRTC_SUCCESS) return nvrtc_error("nvrtcAddNameExpression", rc);
  }
  std::vector<std::string> all_options = compile_options(request);
  if (request.use_pch) all_options.push_back("-pch");
  std::vector<const char*> option_ptrs;
  for (const auto& o : all_options) option_ptrs.push_back(o.c_str());
  nvrtcResult compile_rc =
      nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  CompileOutput out;
  out.log = program_log(program.get(), request.origin);
  if (compile_rc == NVRTC_SUCCESS) {
    if (Status s = read_images(program.get(), request, out); !s) return make_error(s.error());
    if (out.ok) refuse_device_heap(request, out);
    if (!out.ok) out.cubin.clear();
  } else if (compile_rc != NVRTC_ERROR_COMPILATION) {
    return nvrtc_error("nvrtcCompileProgram", compile_rc);
  }
  return out;
}

}  // namespace

Result<CompileOutput> compile_kernel(const CompileRequest& request, const CompileCache* cache) {
  if (!is_valid_arch(request.arch))
    return make_error("invalid architecture '" + request.arch + "' (expected e.g. sm_90a)");
  std::string key = compile_cache_key(request);
  auto headers = toolkit_headers_for(request.source);
  if (auto refused = gate_refusal(request, *headers)) {
    CompileOutput out;
    out.key = key;
    out.log = *refused;
    return out;
  }
  if (cache) {
    if (auto hit = cache->lookup(key)) return *hit;
  }
  auto start = std::chrono::steady_clock::now();
  auto out = run_nvrtc(request, *headers);
  if (!out) return out;
  out->key = key;
  out->millis =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (cache) cache->store(*out);
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
