// The production baseline a GEMM task declares with "cublaslt" (sandbox/task_baselines.h), timed
// by the worker itself exactly as it times candidates: the task's inputs at its timed shape, a
// cold L2 (persisting lines reset, then a memset of twice its size) before every sample, CUPTI's
// kernel records on a stream of its own, the same stopping rule, the busy-GPU check before and
// after. Two rows: the heuristic's first algorithm, and the best of an autotuned search over the
// heuristic's top algorithms (as CUDA-L2 compares against). Every algorithm's output is checked
// against the task's reference under its tolerance before it is timed: a wrong mapping is an
// error, never a time.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// Request: {"task_json", "reference": {source, origin}, "seed", "autotune": N (default 16),
//           "options": an evaluation's options (sandbox/protocol.h; the stopping rule's and the
//                      busy-GPU check's are the ones used)}.
// Response: {"rows": [{"name", "median_us", "noise", "min_us", "samples", "kernels", "detail",
//            "shape", "library_versions"}], "device", "gpu_check", "rejected": [...]}
// or an error (no mapping, no cuBLASLt, a wrong mapping, a busy GPU: "gpu_busy: ...").
Result<nlohmann::json> measure_cublaslt(Device& device, SupportKernels& support,
                                        const nlohmann::json& request);

}  // namespace kopt::worker
