// A kernel that runs beside a candidate's verification run (issue 32, "Races between blocks").
// No tool detects races in global memory, so kernels that communicate between blocks
// (sandbox/inter_block_scan.h) get rounds where the odds of a race showing are raised: an occupier
// kernel on a second stream holds a share of the SMs (one block per SM, forced by asking for more
// than half an SM's shared memory) and loads and stores through a buffer twice the L2's size, so
// the candidate's blocks land on the other SMs in another order and its stores reach memory late
// and out of order. The occupier is launched first; a tiny gate kernel on the candidate's stream
// waits until all its blocks run, and a release kernel after the candidate's plan ends it. It
// also ends by itself after its budget (a quarter of the candidate's run limit): it can never
// hang, and a candidate that waits for SMs the occupier holds (a persistent kernel sized to the
// whole GPU) still finishes within its limit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/result.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/launch_deadline.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// The SMs an occupier of `share` (0..1) holds on a GPU of `sm_count`: at least one, and never all
// (the candidate must have somewhere to run).
int held_sms(double share, int sm_count);

class CoRunner {
 public:
  // Its stream, event, control words and traffic buffer (twice the L2, at least 32 MiB).
  static Result<CoRunner> create(Device& device, SupportKernels& support);

  // Runs `launch` (which queues the candidate's plan on `stream`) beside the occupier holding
  // `share` of the SMs with traffic from `seed`, and waits for `stream` within `limit` as
  // run_plan does. The plan's failures are the run's; the co-runner's own are errors.
  Result<std::optional<PlanFailure>> run(double share, uint64_t seed, CUstream stream,
                                         const RunLimit& limit, const std::string& what,
                                         const std::function<std::optional<PlanFailure>()>& launch,
                                         double* elapsed_seconds);

  // Co-run runs so far (the GPU tests check that the rounds ran).
  int runs() const { return runs_; }

 private:
  Status hold(unsigned blocks, uint64_t budget_ns, uint64_t seed, CUstream stream);
  Status release(CUstream stream);
  Device* device_ = nullptr;
  Stream side_;
  Event reset_;
  DeviceMemory control_;  // [0] release flag, [1] occupier blocks started
  DeviceMemory traffic_;
  CUfunction occupy_ = nullptr, gate_ = nullptr, release_ = nullptr;
  unsigned block_threads_ = 0, shared_bytes_ = 0;
  int runs_ = 0;
};

// One verification step's co-run: the runner, the share of SMs held and the traffic's seed.
struct CoRun {
  CoRunner* runner = nullptr;
  double share = 0;
  uint64_t seed = 0;
};

}  // namespace kopt::worker
