// Hang detection inside the worker. Every run of a candidate's plan gets a deadline derived from
// what the task already showed at that shape (the trusted reference's, or the baseline's, time
// there, times a generous factor, never under a floor of half a second). The worker polls the
// stream against it; a kernel still running at the deadline is a `timeout` verdict, the context
// is abandoned and the worker exits, which makes the driver stop the kernel. The supervisor's
// wall-clock limit stays as the last line of defence only.
#pragma once

#include <optional>
#include <string>

#include "sandbox/protocol.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/plan_launcher.h"

namespace kopt::worker {

// How long one run of a plan may take before it counts as hung.
struct RunLimit {
  double seconds = 60;  // trusted kernels (reference, baseline): only a backstop
  std::string basis;    // why this long, for the verdict's detail
};

// The limit for a candidate at a shape where a trusted kernel took `trusted_seconds`.
RunLimit candidate_run_limit(const EvalOptions& options, double trusted_seconds,
                             const std::string& what);

// Waits until every operation queued on `stream` finished, or `limit` passed. On expiry the
// device is abandoned and the failure is a timeout with `fatal` set; a CUDA error the stream
// reports is a crash or launch error as usual.
std::optional<PlanFailure> wait_for_stream(Device& device, CUstream stream, const RunLimit& limit,
                                           const std::string& what, double* elapsed_seconds);

}  // namespace kopt::worker
