// kopt doctor: what this machine has for kopt, one line per finding; non-zero when something
// kopt needs is missing.
#include <cupti.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "config/config.h"
#include "sandbox/compiler.h"
#include "sandbox/confined/landlock.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/nvml.h"
#include "sandbox/sanitizer_runner.h"
#include "src/cli/command.h"
#include "src/cli/llm_preflight.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"

namespace kopt::cli {
namespace {

// The findings, printed as they come (one line each) or, with --json, kept for one document at
// the end: {"kopt", "findings": [{"state": "ok"|"MISSING"|"BUSY"|"note", "what", "detail"}],
// "missing", "exit_code"}.
struct Report {
  bool json = false;
  int missing = 0;
  nlohmann::json findings = nlohmann::json::array();
  void add(const char* state, const std::string& what, const std::string& detail) {
    if (json) {
      findings.push_back({{"state", state}, {"what", what}, {"detail", detail}});
    } else {
      std::printf("  %-8s %-22s %s\n", state, what.c_str(), detail.c_str());
    }
  }
  void found(const std::string& what, const std::string& value) { add("ok", what, value); }
  void lacking(const std::string& what, const std::string& why) {
    add("MISSING", what, why);
    ++missing;
  }
  // Something kopt can live without, said so that the operator knows what it costs.
  void note(const std::string& what, const std::string& why) { add("note", what, why); }
};

// Who else computes on the GPU: a shared GPU makes every timing wrong (kopt refuses to time on
// one, and the daemon waits for it to be quiet), so the operator sees it before the night starts.
void report_gpu_processes(Report& report, const CudaDriver& d, CUdevice dev, int ordinal) {
  char bus_id[64] = {};
  std::string what = "GPU " + std::to_string(ordinal) + " users";
  if (d.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, dev) != CUDA_SUCCESS) return;
  auto activity = gpu_activity(bus_id);
  if (!activity) {
    report.found(what, "unknown (" + activity.error() + ")");
    return;
  }
  std::string clocks =
      clocks_held_down(activity->clock_event_reasons)
          ? "; clocks held down: " + describe_clock_events(activity->clock_event_reasons)
          : "";
  if (activity->processes.empty()) {
    report.found(what, "none (no other process computes on it)" + clocks);
    return;
  }
  std::string names;
  for (const auto& p : activity->processes)
    names += (names.empty() ? "" : ", ") + describe_process(p);
  report.add("BUSY", what,
             std::to_string(activity->processes.size()) + " process" +
                 (activity->processes.size() == 1 ? "" : "es") + ": " + names + clocks +
                 "; kopt will not time kernels here until they end");
}

void check_gpu(Report& report) {
  auto driver = load_cuda_driver();
  if (!driver) {
    report.lacking("GPU", driver.error());
    return;
  }
  const CudaDriver& d = **driver;
  int version = 0;
  d.cuDriverGetVersion(&version);
  report.found("driver (CUDA API)",
               std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10));
  int count = 0;
  d.cuDeviceGetCount(&count);
  if (count == 0) {
    report.lacking("GPU", "the driver sees no GPU");
    return;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    d.cuDeviceGet(&dev, i);
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name, dev);
    int major = 0, minor = 0, sms = 0;
    d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    size_t mem = 0;
    d.cuDeviceTotalMem(&mem, dev);
    report.found("GPU " + std::to_string(i),
                 std::string(name) + ", compute capability " + std::to_string(major) + "." +
                     std::to_string(minor) + ", " + std::to_string(sms) + " SMs, " +
                     std::to_string(mem >> 30) + " GiB");
    report_gpu_processes(report, d, dev, i);
  }
}

// The LLM side of the config: each provider's endpoint, the models agents use on it, whether
// its key variable is set (never the key), and each model asked once (llm_preflight.h).
void check_llm(Report& report, const std::optional<std::filesystem::path>& path) {
  auto config = load_config_or_defaults(path);
  if (!config) {
    report.lacking("config", "\n" + config.error());
    return;
  }
  report.found("config",
               config->source.empty() ? "none (built-in defaults)" : config->source.string());
  if (!config->llm) {
    report.found("LLM", "none configured: the daemon uses its built-in tuner");
    return;
  }
  for (const auto& [name, p] : config->llm->providers) {
    std::string models;
    for (const auto& [role, agent] : config->llm->agents) {
      if (agent.provider != name) continue;
      models += (models.empty() ? "" : ", ") + agent.model + " (" + role + ")";
    }
    std::string endpoint =
        p.type == ProviderType::kCommand
            ? "command " + (p.command.empty() ? std::string() : p.command[0])
            : std::string(provider_type_name(p.type)) + " " + redact_url(p.base_url);
    std::string line = endpoint + "; models: " + (models.empty() ? "none" : models);
    const char* key = p.api_key_env.empty() ? nullptr : std::getenv(p.api_key_env.c_str());
    if (p.api_key_env.empty()) {
      report.found("LLM " + name, line + "; no key");
    } else if (key && *key) {
      report.found("LLM " + name, line + "; $" + p.api_key_env + " is set");
    } else {
      report.lacking("LLM " + name, line + "; $" + p.api_key_env + " is not set");
    }
  }
  report.missing += report_llm_probes(*config->llm, [&](bool usable, const std::string& line) {
    report.add(usable ? "ok" : "MISSING", "LLM model", line);
  });
}

// compute-sanitizer (the new-best gate's memcheck, racecheck, synccheck and initcheck) and
// PyTorch (kopt baselines, tasks import): kopt works without them, at a cost said here.
void check_optional_tools(Report& report) {
  if (auto sanitizer = find_compute_sanitizer()) {
    report.found("compute-sanitizer", *sanitizer);
  } else {
    report.note("compute-sanitizer",
                "not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): a new best is not run "
                "under memcheck/racecheck/synccheck/initcheck");
  }
  const char* python = std::getenv("KOPT_PYTHON");
  std::string interpreter = python && *python ? python : "python3";
  auto torch = run_command({interpreter, "-c", "import torch; print(torch.__version__)"}, "",
                           std::chrono::seconds(60));
  if (torch && torch->exit_code == 0) {
    report.found("PyTorch", trim(torch->stdout_text) + " (" + interpreter + ")");
  } else {
    report.note("PyTorch", "not importable by " + interpreter +
                               " (set KOPT_PYTHON): kopt baselines and kopt tasks import need "
                               "it; the daemon does not");
  }
}

}  // namespace

int run_doctor(int argc, char** argv) {
  cxxopts::Options options("kopt doctor", "check what kopt needs on this machine");
  add_database_option(options);
  options.add_options()("json", "one JSON document on stdout");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;

  Report report;
  report.json = args->count("json") > 0;
  if (!report.json) std::printf("kopt %s\n", KOPT_VERSION);
  check_gpu(report);
  report.found("NVRTC", nvrtc_version());
  uint32_t cupti_version = 0;
  if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS) {
    report.found("CUPTI", "API version " + std::to_string(cupti_version));
  } else {
    report.lacking("CUPTI", "cuptiGetVersion failed");
  }
  std::filesystem::path include = cuda_home() / "include" / "cuda_bf16.h";
  if (std::filesystem::exists(include)) {
    report.found("CUDA headers", (cuda_home() / "include").string());
  } else {
    report.lacking("CUDA headers", include.string() + " not found (set CUDA_HOME)");
  }
  if (auto db = database_path(*args)) {
    report.found("database",
                 db->string() + (std::filesystem::exists(*db) ? "" : " (not created yet)"));
  } else {
    report.lacking("database", db.error());
  }
  report.found("compile cache", (cache_directory() / "compile").string());
  check_optional_tools(report);
  if (std::string why = landlock_unavailable_reason(); why.empty()) {
    report.found("compile confinement", "Landlock (NVRTC reads only the toolkit and libraries)");
  } else {
    report.add("WARNING", "compile confinement", why + ": " + kUnconfinedCompileWarning);
  }
  check_llm(report, args->count("config")
                        ? std::optional<std::filesystem::path>((*args)["config"].as<std::string>())
                        : std::nullopt);
  int exit_code = report.missing ? 1 : 0;
  if (report.json) {
    std::cout << dump_json_ascii(nlohmann::json{{"kopt", KOPT_VERSION},
                                                {"findings", report.findings},
                                                {"missing", report.missing},
                                                {"exit_code", exit_code}},
                                 2)
              << "\n";
    return exit_code;
  }
  std::printf("%s\n", report.missing ? "some things kopt needs are missing (see MISSING above)"
                                     : "everything kopt needs is here");
  return exit_code;
}

}  // namespace kopt::cli
