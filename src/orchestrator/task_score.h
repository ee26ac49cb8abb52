// The number a task's weight and stopping rule read (SearchSettings::score): its best %SOL, or
// the SOL score S of its best kernel against the best production baseline measured for it on
// this GPU model (common/sol_score.h). A plain function of numbers, tested directly.
#pragma once

#include <optional>
#include <string>

#include "common/score_basis.h"
#include "common/sol_score.h"

namespace kopt::orchestrator {

struct TaskScore {
  bool uses_s = false;    // false: %SOL decides
  double s = 0;           // S of the best kernel, when uses_s
  std::string reference;  // what S is measured against (a production name or "baseline.cu")
  std::string fallback;   // why %SOL decides although S was asked for; "" otherwise
};

// `best_sol_percent`: the task's best share of speed of light (0: nothing measured yet);
// `sol_us`: its speed-of-light time (0: no bound); `baseline_us`: baseline.cu's median;
// `production`: the best production baseline measured for the task on this GPU model, if any.
// With kAuto, S needs a production baseline (else %SOL, silently: that is the rule); with
// kSolScore, baseline.cu stands in for a missing one, as standing() does. When S cannot be
// computed (no bound, a kernel faster than the bound, a reference at the bound), %SOL decides
// and `fallback` says why.
TaskScore task_score(ScoreBasis basis, double best_sol_percent, double sol_us, double baseline_us,
                     const std::optional<ProductionReference>& production);

}  // namespace kopt::orchestrator
