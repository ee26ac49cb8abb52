// Task hygiene (robust-kbench and METR found these necessary): a task whose reference output is
// near zero everywhere, constant, or unchanged when one input changes cannot tell a right kernel
// from a cheap wrong one; and a baseline that disagrees with its reference is a broken task.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

// A trusted kernel of a request ({"source", "origin"}), compiled for this GPU and loaded.
Result<LoadedKernel> build_trusted_kernel(Device& device, const nlohmann::json& source,
                                          const TaskSpec& task);

// Request: {"task_json", "reference": {source, origin}, "baseline": {source, origin}, "seed"}.
// Response: {"findings": [{"shape", "problem"}], "baseline_verdict", "baseline_detail"}.
Result<nlohmann::json> check_task_hygiene(Device& device, SupportKernels& support,
                                          const nlohmann::json& request);

}  // namespace kopt::worker
