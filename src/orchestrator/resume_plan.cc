#include "src/orchestrator/resume_plan.h"

#include <fmt/format.h>

namespace kopt::orchestrator {

ResumePlan plan_resume(const memory::RunRecord& last, bool tasks_named,
                       const std::vector<Submission>& waiting) {
  ResumePlan plan;
  if (!waiting.empty()) {
    plan.message =
        fmt::format("kopt run --resume: {} task folder(s) queued by `kopt submit` join run {}:\n",
                    waiting.size(), last.id);
    for (const Submission& s : waiting) {
      plan.message += fmt::format("  {} (submitted {})\n", s.task_dir, s.submitted_at);
    }
  }
  // "finished": every task reached done, failed or parked; budget and interrupted runs have
  // work left, and a run still marked running was killed.
  if (last.status == RunStatus::kFinished && !tasks_named && waiting.empty()) {
    plan.nothing_to_resume = true;
    plan.message = fmt::format(
        "run {} finished{}: every task is done or parked, nothing to resume (no LLM call made).\n"
        "To search again, start a new run: kopt run --tasks DIR (the memory's kernels are its "
        "warm start); to add a task to this run: kopt submit DIR, then kopt run --resume.\n",
        last.id, last.finished_at.empty() ? "" : " at " + last.finished_at);
  }
  return plan;
}

}  // namespace kopt::orchestrator
