#include "sandbox/confined/confined_compile.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "sandbox/confined/child_environment.h"
#include "sandbox/include_policy.h"
#include "sandbox/kernel_file.h"

#ifndef KOPT_COMPILE_BINARY
#define KOPT_COMPILE_BINARY "kopt-compile"
#endif

namespace kopt {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", value);
  return text;
}

// A compile error decided without NVRTC's output: a refused source or an exhausted limit.
CompileOutput refused(const std::string& key, std::string log) {
  CompileOutput out;
  out.key = key;
  out.log = std::move(log);
  return out;
}

// The compile error a candidate earns by exhausting a limit; never cached.
CompileOutput limit_exceeded(const std::string& key, const std::string& what) {
  return refused(key, "the compiler exceeded its limit of " + what +
                          " (the source is refused; simplify it: fewer template or macro "
                          "expansions)\n");
}

// The child's environment and limits: address space, CPU time, no files, no core.
Subprocess::Options compiler_options(const CompileLimits& limits) {
  Subprocess::Options options;
  options.stderr_mode = Subprocess::StderrMode::kCapture;
  options.environment = compiler_environment();
  auto cpu = static_cast<uint64_t>(limits.cpu_seconds);
  options.limits = {{RLIMIT_AS, limits.address_space_bytes, std::nullopt},
                    // SIGXCPU at the soft limit, SIGKILL a second later.
                    {RLIMIT_CPU, cpu + 1, cpu},
                    // NVRTC writes no file; the child writes only to its pipes.
                    {RLIMIT_FSIZE, 0, std::nullopt},
                    {RLIMIT_CORE, 0, std::nullopt},
                    {RLIMIT_NOFILE, 256, std::nullopt}};
  return options;
}

// A child that did not exit 0: which limit it hit, or why it failed. Nothing for a clean exit.
std::optional<Result<CompileOutput>> failed_exit(Subprocess& child, int status,
                                                 const std::string& key,
                                                 const CompileLimits& limits) {
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL))
    return limit_exceeded(key, std::to_string(limits.cpu_seconds) + " s of CPU time");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  // NVRTC out of address space throws or aborts; a candidate cannot crash it otherwise.
  std::string said = child.captured_stderr();
  if (said.size() > 2000) said = said.substr(said.size() - 2000);
  if (WIFSIGNALED(status) || said.find("bad_alloc") != std::string::npos ||
      said.find("memory") != std::string::npos)
    return limit_exceeded(key, mib(limits.address_space_bytes) +
                                   " of memory (it ended: " + describe_wait_status(status) + ")");
  return make_error("the compiler failed (" + describe_wait_status(status) + "): " + said);
}

// Splits "JSON line\nBYTES".
Result<std::pair<json, std::string>> split_frame(const std::string& bytes, const char* what) {
  size_t newline = bytes.find('\n');
  if (newline == std::string::npos) return make_error(std::string(what) + ": no header line");
  try {
    return std::make_pair(json::parse(bytes.substr(0, newline)), bytes.substr(newline + 1));
  } catch (const std::exception& e) {
    return make_error(std::string(what) + ": bad header: " + e.what());
  }
}

}  // namespace

std::string encode_compile_request(const CompileRequest& request) {
  json header = {{"origin", request.origin},
                 {"arch", request.arch},
                 {"defines", request.defines},
                 {"extra_options", request.extra_options},
                 {"kernel_names", request.kernel_names}};
  return header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" + request.source;
}

Result<CompileRequest> decode_compile_request(const std::string& bytes) {
  auto frame = split_frame(bytes, "compile request");
  if (!frame) return make_error(frame.error());
  try {
    const json& h = frame->first;
    CompileRequest request;
    request.origin = h.at("origin").get<std::string>();
    request.arch = h.at("arch").get<std::string>();
    request.defines = h.at("defines").get<std::map<std::string, int64_t>>();
    request.extra_options = h.at("extra_options").get<std::vector<std::string>>();
    request.kernel_names = h.at("kernel_names").get<std::vector<std::string>>();
    request.source = std::move(frame->second);
    return request;
  } catch (const std::exception& e) {
    return make_error(std::string("compile request: ") + e.what());
  }
}

std::string encode_compile_output(const CompileOutput& output, const std::string& note) {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  json header = {
      {"ok", output.ok},   {"log", output.log},       {"lowered_names", output.lowered_names},
      {"ptx", output.ptx}, {"millis", output.millis}, {"max_rss_kib", usage.ru_maxrss},
      {"note", note}};
  return header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" + output.cubin;
}

Result<CompileOutput> decode_compile_output(const std::string& bytes, std::string* note) {
  auto frame = split_frame(bytes, "compiler output");
  if (!frame) return make_error(frame.error());
  try {
    const json& h = frame->first;
    if (h.contains("error")) return make_error(h.at("error").get<std::string>());
    CompileOutput out;
    out.ok = h.at("ok").get<bool>();
    out.log = h.at("log").get<std::string>();
    out.lowered_names = h.at("lowered_names").get<std::map<std::string, std::string>>();
    out.ptx = h.value("ptx", "");
    out.millis = h.at("millis").get<double>();
    out.cubin = std::move(frame->second);
    if (note) *note = h.value("note", "");
    return out;
  } catch (const std::exception& e) {
    return make_error(std::string("compiler output: ") + e.what());
  }
}

std::string confined_compiler_binary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / "kopt-compile", ec))
    return (self.parent_path() / "kopt-compile").string();
  if (std::filesystem::exists(KOPT_COMPILE_BINARY, ec)) return KOPT_COMPILE_BINARY;
  return "kopt-compile";
}

Result<CompileOutput> compile_confined(const CompileRequest& request, const CompileCache* cache,
                                       const CompileLimits& limits) {
  if (!is_valid_arch(request.arch))
    return make_error("invalid architecture '" + request.arch + "' (expected e.g. sm_90a)");
  std::string key = compile_cache_key(request);
  if (request.source.size() > kMaxKernelSourceBytes)
    return refused(key, request.origin + ": the source is " +
                            std::to_string(request.source.size()) + " bytes, over the limit of " +
                            std::to_string(kMaxKernelSourceBytes) + " bytes\n");
  if (cache) {
    if (auto hit = cache->lookup(key)) return *hit;
  }
  // The scan runs here too: a refused include costs no child.
  if (auto why = check_includes(request.source, request.origin, toolkit_include_roots()))
    return refused(key, *why);

  Subprocess::Options options = compiler_options(limits);
  auto started = Clock::now();
  auto child = Subprocess::start({confined_compiler_binary()}, options);
  if (!child) return make_error("cannot start the compiler: " + child.error());
  // The child reads its whole request before it writes, so one thread can write then read; a
  // child that died early (a limit) makes the write fail, and its status tells why.
  (void)child->write_all(encode_compile_request(request));
  child->close_stdin();
  auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(limits.wall_seconds));
  auto bytes = child->read_all(deadline, limits.output_bytes);
  if (!bytes) {
    // poll() waits whole milliseconds, so its timeout can end a hair before `deadline`: the
    // read's own "deadline passed" counts as late too (it was an error once, under load).
    bool late =
        Clock::now() >= deadline || bytes.error().find("deadline passed") != std::string::npos;
    child->kill_group();
    if (late) return limit_exceeded(key, seconds(limits.wall_seconds) + " of wall time");
    if (bytes.error().find("exceeds") != std::string::npos)
      return limit_exceeded(key, mib(limits.output_bytes) + " of output");
    return make_error("the compiler: " + bytes.error());
  }
  auto status = child->wait_for(std::chrono::milliseconds(std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count())));
  if (!status) {
    child->kill_group();
    return limit_exceeded(key, seconds(limits.wall_seconds) + " of wall time");
  }
  if (auto failed = failed_exit(*child, *status, key, limits)) return std::move(*failed);
  std::string note;
  auto out = decode_compile_output(*bytes, &note);
  if (!out) return make_error(out.error());
  out->key = key;
  // NVRTC reports running out of its address space as a catastrophic error of the source.
  if (!out->ok && out->log.find("catastrophic error: out of memory") != std::string::npos)
    return limit_exceeded(key, mib(limits.address_space_bytes) + " of memory");
  if (cache) cache->store(*out);
  return out;
}

}  // namespace kopt
