// kopt doctor: what this machine has for kopt, one line per finding; non-zero when something
// kopt needs is missing.
#include <cupti.h>

#include <iostream>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/confined/landlock.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/nvml.h"
#include "src/cli/command.h"
#include "src/cli/llm_preflight.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/config/config.h"

namespace kopt::cli {
namespace {

struct Report {
  int missing = 0;
  void found(const std::string& what, const std::string& value) {
    std::printf("  ok       %-22s %s\n", what.c_str(), value.c_str());
  }
  void lacking(const std::string& what, const std::string& why) {
    std::printf("  MISSING  %-22s %s\n", what.c_str(), why.c_str());
    ++missing;
  }
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
  std::printf(
      "  BUSY     %-22s %zu process%s: %s%s; kopt will not time kernels here until they "
      "end\n",
      what.c_str(), activity->processes.size(), activity->processes.size() == 1 ? "" : "es",
      names.c_str(), clocks.c_str());
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
  report.missing += report_llm_probes(*config->llm);
}

}  // namespace

int run_doctor(int argc, char** argv) {
  cxxopts::Options options("kopt doctor", "check what kopt needs on this machine");
  add_database_option(options);
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;

  Report report;
  std::printf("kopt %s\n", KOPT_VERSION);
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
  if (std::string why = landlock_unavailable_reason(); why.empty()) {
    report.found("compile confinement", "Landlock (NVRTC reads only the toolkit and libraries)");
  } else {
    std::printf("  WARNING  %-22s %s: %s\n", "compile confinement", why.c_str(),
                kUnconfinedCompileWarning);
  }
  check_llm(report, args->count("config")
                        ? std::optional<std::filesystem::path>((*args)["config"].as<std::string>())
                        : std::nullopt);
  std::printf("%s\n", report.missing ? "some things kopt needs are missing (see MISSING above)"
                                     : "everything kopt needs is here");
  return report.missing ? 1 : 0;
}

}  // namespace kopt::cli
