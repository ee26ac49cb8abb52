// One evaluation request, start to verdict: compile, verify over rounds of fresh inputs on every
// shape (then holdout), time candidate and baseline interleaved, and score against speed of light.
#pragma once

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// Errors are for broken requests (a task that does not parse); every property of the candidate
// is a verdict in the result. After a sticky CUDA error, device.context_lost() is true.
// `pool` (optional) keeps input sets and the reference's outputs across evaluations.
Result<EvalResult> evaluate(Device& device, SupportKernels& support, const EvalRequest& request,
                            InputPool* pool = nullptr);

}  // namespace kopt::worker
