// Processes of kopt's own that may hold a CUDA context beside the worker: a helper that kopt (or
// its quality bench) started, for example the PyTorch process that times production baselines.
// The starter names them in KOPT_OWN_GPU_PIDS (comma-separated); the busy-GPU checks list them
// as kopt's own instead of as another user. Only processes of this user count: another user's
// process named there is still another user. Being declared only clears the process listing:
// the probe kernel before and after timing still catches a declared helper that computes (its
// work stretches the probe), so nothing of kopt may run on the GPU while a candidate is timed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sandbox/nvml.h"

namespace kopt {

inline constexpr const char* kOwnGpuPidsVariable = "KOPT_OWN_GPU_PIDS";

// The PIDs in `text` ("4242,4343") whose owner is `uid` according to `owner_of` (nullopt: no
// such process). Malformed entries are skipped.
std::vector<unsigned> parse_own_gpu_pids(const std::string& text, unsigned uid,
                                         std::optional<unsigned> (*owner_of)(unsigned pid));

// The owner of /proc/PID, or nullopt when that process is not visible.
std::optional<unsigned> proc_owner(unsigned pid);

// KOPT_OWN_GPU_PIDS of this process's environment, checked against this user (getuid()).
std::vector<unsigned> own_gpu_pids();

// `activity`'s processes other than `self` and the declared `own` ones, the same rules as
// other_processes() otherwise; `declared` receives the declared ones present.
std::vector<GpuProcess> foreign_processes(const GpuActivity& activity, unsigned self,
                                          const std::vector<unsigned>& own,
                                          std::vector<GpuProcess>* declared = nullptr);

}  // namespace kopt
