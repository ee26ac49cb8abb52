#include "src/orchestrator/task_score.h"

namespace kopt::orchestrator {

TaskScore task_score(ScoreBasis basis, double best_sol_percent, double sol_us, double baseline_us,
                     const std::optional<ProductionReference>& production) {
  TaskScore out;
  const bool measured = production && production->median_us > 0;
  if (basis == ScoreBasis::kSolPercent || (basis == ScoreBasis::kAuto && !measured)) return out;
  if (best_sol_percent <= 0 && baseline_us <= 0) return out;  // nothing timed yet
  if (best_sol_percent <= 0 || sol_us <= 0) {
    out.fallback = "no speed-of-light bound";
    return out;
  }
  // The best kernel's time as %SOL knows it, so that both bases judge the same kernel.
  double kernel_us = sol_us * 100.0 / best_sol_percent;
  Standing standing_now =
      standing(kernel_us, baseline_us, sol_us, measured ? production : std::nullopt);
  if (!standing_now.score) {
    out.fallback = standing_now.score_note;
    return out;
  }
  out.uses_s = true;
  out.s = *standing_now.score;
  out.reference = standing_now.score_reference;
  return out;
}

}  // namespace kopt::orchestrator
