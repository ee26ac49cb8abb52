#include "src/orchestrator/slurm_workers.h"

#include <filesystem>

#include "common/strings.h"

namespace kopt::orchestrator {

std::optional<SlurmGrant> slurm_granted_gpus(
    const std::function<const char*(const char*)>& getenv_fn) {
  auto value = [&](const char* name) {
    const char* v = getenv_fn(name);
    return std::string(v ? v : "");
  };
  SlurmGrant grant;
  grant.job_id = value("SLURM_JOB_ID");
  if (grant.job_id.empty()) return std::nullopt;
  for (const char* list : {"SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"}) {
    std::string text = value(list);
    if (trim(text).empty()) continue;
    for (const auto& part : split(text, ',')) {
      if (!trim(part).empty()) ++grant.gpus;
    }
    grant.source = std::string(list) + "=" + text;
    return grant.gpus > 0 ? std::optional(grant) : std::nullopt;
  }
  std::string count = trim(value("SLURM_GPUS_ON_NODE"));
  if (count.empty() || count.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  grant.gpus = std::stoi(count);
  grant.source = "SLURM_GPUS_ON_NODE=" + count;
  return grant.gpus > 0 ? std::optional(grant) : std::nullopt;
}

void name_srun_job(std::vector<std::string>& prefix, int64_t run_id, int gpu) {
  auto srun = prefix.end();
  for (auto it = prefix.begin(); it != prefix.end(); ++it) {
    if (std::filesystem::path(*it).filename() == "srun") {
      srun = it;
      break;
    }
  }
  if (srun == prefix.end()) return;
  for (auto it = srun + 1; it != prefix.end(); ++it) {
    if (it->rfind("-J", 0) == 0 || it->rfind("--job-name", 0) == 0) return;
  }
  prefix.insert(srun + 1,
                "--job-name=kopt-run-" + std::to_string(run_id) + "-gpu" + std::to_string(gpu));
}

}  // namespace kopt::orchestrator
