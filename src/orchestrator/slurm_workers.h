// What `kopt run` does differently on a Slurm cluster: the GPUs of the allocation it runs in are
// its default GPUs, and each srun it starts for a worker is named after the run and the GPU, so
// that `squeue` shows whose job it is (README.md, "Running on Slurm").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kopt::orchestrator {

// The GPUs Slurm granted the job this process runs in.
struct SlurmGrant {
  std::string job_id;
  int gpus = 0;
  std::string source;  // "SLURM_JOB_GPUS=0,1", for the log line
};

// Reads SLURM_JOB_ID with SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES, else SLURM_GPUS_ON_NODE.
// nullopt outside a job, or in a job without GPUs.
std::optional<SlurmGrant> slurm_granted_gpus(
    const std::function<const char*(const char*)>& getenv_fn);

// Adds --job-name=kopt-run-<run>-gpu<gpu> after the srun in `prefix`, unless the template names
// the job itself (-J, --job-name). Other launchers are left alone.
void name_srun_job(std::vector<std::string>& prefix, int64_t run_id, int gpu);

}  // namespace kopt::orchestrator
