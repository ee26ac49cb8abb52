// `kopt eval TASK [KERNEL.cu] --shapes`: where the kernel stands at each shape of the task's
// sweep, not only at the timed one. The worker times one shape per request (the task's default
// sizes), so each sweep shape becomes a request of its own: the task with that shape as its
// default, verified once (one round, no stress or drawn shapes: the full evaluation before
// already judged it) and timed interleaved with the baseline as any evaluation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/evaluator.h"

namespace kopt::cli {

struct ShapeTiming {
  std::string shape;  // "rows=7 cols=4097", "(timed shape)" for the default
  std::string verdict;
  double candidate_us = 0, baseline_us = 0, speedup = 0, sol_percent = 0, noise = 0;
};

// The task's JSON with `overrides` (a sweep entry) as its default sizes and nothing else to
// verify but that one shape.
Result<std::string> task_at_shape(const std::string& task_json, const nlohmann::json& overrides);

// Times `request`'s candidate at every shape of its task's sweep, in the task's order.
Result<std::vector<ShapeTiming>> time_each_shape(Evaluator& evaluator, const EvalRequest& request);

// The rows as a JSON array (null for what was not measured).
nlohmann::json shape_timings_json(const std::vector<ShapeTiming>& rows);
// The table on stdout.
void print_shape_timings(const std::vector<ShapeTiming>& rows);

}  // namespace kopt::cli
