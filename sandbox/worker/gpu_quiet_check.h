// Is this GPU ours alone right now? A number timed while another process computes on the GPU, or
// while its clocks are held down, is wrong by up to several times and must never become a recorded
// win. Checked before and after timing: no other process holds compute on the GPU (NVML), no
// hardware or thermal slowdown is active, and a fixed compute-bound probe kernel runs within a
// tolerance of its best known time on this GPU model (cached on disk like the DRAM peak). The probe
// catches what NVML cannot see (another container's processes, MIG neighbours, an NVML-less
// machine).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

struct QuietVerdict {
  bool quiet = true;
  std::string reason;    // why not, one line naming processes, clocks or probe times
  nlohmann::json facts;  // probe_us, best_probe_us, other_processes, clocks, nvml
};

class GpuQuietCheck {
 public:
  GpuQuietCheck(Device& device, SupportKernels& support) : device_(device), support_(support) {}

  // Errors only when the probe itself cannot run; an unavailable NVML is a fact, not an error.
  Result<QuietVerdict> check(double probe_tolerance);

 private:
  Result<double> probe_median_us();
  double sm_clock_mhz();  // 0 where NVML cannot say
  Result<double> probe_at_max_clock(unsigned max_clock_mhz, QuietVerdict& verdict);
  Device& device_;
  SupportKernels& support_;
};

}  // namespace kopt::worker
