// Is this GPU ours alone right now? A number timed while another process computes on the GPU, or
// while its clocks are held down, is wrong by up to several times and must never become a recorded
// win. Checked before and after timing: no other process holds compute on the GPU (NVML), no
// hardware or thermal slowdown is active, and a fixed compute-bound probe kernel runs within a
// tolerance of its best known length in SM cycles on this GPU model (cached on disk like the DRAM
// peak; probe_reading.h says why cycles). The probe
// catches what NVML cannot see (another container's processes, MIG neighbours, an NVML-less
// machine).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/probe_reading.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

struct QuietVerdict {
  bool quiet = true;
  std::string reason;    // why not, one line naming processes, clocks or probe times
  nlohmann::json facts;  // probe_us, probe_kilocycles, best_probe_kilocycles, processes, clocks
};

class GpuQuietCheck {
 public:
  GpuQuietCheck(Device& device, SupportKernels& support) : device_(device), support_(support) {}

  // Errors only when the probe itself cannot run; an unavailable NVML is a fact, not an error.
  Result<QuietVerdict> check(double probe_tolerance);

 private:
  // `reps` timed launches of the probe (after one that warms up), their reading noted in facts.
  Result<ProbeReading> probe(int reps, QuietVerdict& verdict);
  Device& device_;
  SupportKernels& support_;
};

}  // namespace kopt::worker
