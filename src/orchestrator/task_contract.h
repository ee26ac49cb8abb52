// The task contract: what every planner and coder prompt of a task states first, the same text
// for the whole task so that a provider's prompt cache keeps the prefix. Inputs and outputs
// (dtype, shape, layout), the tolerance and the NAMES of the stress rounds (never the hidden
// shapes or seeds), bytes and flops at the timed size, the speed-of-light time, the GPU's peaks
// and limits, and what the sandbox supports. About 600 tokens at most (task_contract_test.cc).
#pragma once

#include <string>

#include "sandbox/task_spec.h"
#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

// `sol_us`: the speed-of-light time at the timed size, as the baseline's evaluation measured it
// (0: unknown). The GPU's DRAM bandwidth or peak FLOP/s is the one that bounds the task,
// derived from it (bytes / time or flops / time), unless the worker reported it.
std::string task_contract(const TaskSpec& task, const GpuIdentity& gpu, double sol_us);

}  // namespace kopt::orchestrator
