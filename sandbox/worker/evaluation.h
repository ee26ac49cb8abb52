// One evaluation request, start to verdict: compile, verify over rounds of fresh inputs on every
// shape (then holdout), time candidate and baseline interleaved, and score against speed of light.
#pragma once

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/worker/baseline_history.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/gpu_quiet_check.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// Verification rounds at one shape: the full count, except for shapes so large that they
// dominate the cost (tasks/README.md, "Verification rounds").
Result<int> verification_rounds(const EvalOptions& options, const TaskSpec& task,
                                const ShapeBinding& sizes);

// The device's free memory in bytes (0 when the driver cannot say): what the round past 2^31
// elements needs (sandbox/worker/verify_plan.h).
int64_t free_device_bytes(Device& device);

// Errors are for broken requests (a task that does not parse); every property of the candidate
// is a verdict in the result. After a sticky CUDA error, device.context_lost() is true.
// `quiet` is the worker's one busy-GPU check (its probe's history serves every evaluation), `pool`
// (optional) keeps input sets and the reference's outputs across evaluations, `baselines`
// (optional) the baseline's timing samples.
Result<EvalResult> evaluate(Device& device, SupportKernels& support, GpuQuietCheck& quiet,
                            const EvalRequest& request, InputPool* pool = nullptr,
                            BaselineHistory* baselines = nullptr);

}  // namespace kopt::worker
