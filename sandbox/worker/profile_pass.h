// The profile pass: hardware counters of a verified candidate's plan at the timed shape, taken
// after the timed samples on buffers of its own, so timing stays clean. One run of the plan per
// replay pass (RangeProfiler::passes(), 15 on an H100 for profile_metric_names()), each after
// an L2 flush (a read sweep, outside the profiled range) as Nsight Compute's --cache-control all
// does. Without counter permission the first result says so (result.profile_note) and no later
// one tries again. KOPT_PROFILE_TRACE=1 prints where each pass's host time went (stderr).
#pragma once

#include "sandbox/protocol.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// Fills result.profile (or result.profile_note) for options.profile "cupti"; for "bracket" runs
// the plan once between cuProfilerStart and cuProfilerStop for an outside profiler. A failure
// of the pass is a note, never a verdict: the candidate is already judged.
void profile_candidate(Device& device, SupportKernels& support, const TaskSpec& task,
                       const LoadedKernel& reference, const LoadedKernel& candidate,
                       const ShapeBinding& sizes, const EvalOptions& options, uint64_t seed,
                       EvalResult& result);

}  // namespace kopt::worker
