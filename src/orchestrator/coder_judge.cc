#include "src/orchestrator/coder_judge.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/utf8.h"

namespace kopt::orchestrator {

std::string describe_result(const CandidateOutcome& outcome) {
  if (!outcome.judged) return "no verdict: " + first_line_clipped(outcome.error);
  if (outcome.verified && outcome.verified->screened) {
    return fmt::format("screened {:.3f}x ({:.2f} us, {:.1f}% SOL; not faster than the best)",
                       outcome.verified->speedup, outcome.verified->median_us,
                       outcome.verified->sol_percent);
  }
  if (outcome.verified) {
    return fmt::format("ok {:.3f}x ({:.2f} us, {:.1f}% SOL)", outcome.verified->speedup,
                       outcome.verified->median_us, outcome.verified->sol_percent);
  }
  return verdict_name(outcome.verdict) + ": " + first_line_clipped(outcome.detail);
}

std::optional<agents::Judgement> CoderJudge::refuse(const std::string& source, int attempt,
                                                    Admission& admission) {
  std::lock_guard lock(*hooks_.mutex);
  admission = hooks_.task->admit(source, plan_title_, attempt);
  if (admission.admitted) return std::nullopt;
  if (admission.repeat) {
    calls_.push_back(CallOutcome::kRepeat);
    spdlog::info("[{}] {}", hooks_.task->spec().name, admission.log);
  }
  return admission.refusal;
}

agents::Judgement CoderJudge::operator()(const std::string& source, int attempt) {
  ++answers_;
  if (hooks_.stopping()) return {false, false, "stopped", "the daemon is stopping"};
  Admission admission;
  if (auto refusal = refuse(source, attempt, admission)) return *refusal;
  CandidateOutcome outcome = hooks_.evaluate(source, attempt);
  std::string verdict = describe_result(outcome);
  spdlog::info("[{}] coder '{}' attempt {}: {}", hooks_.task->spec().name, plan_title_, attempt,
               verdict);
  {
    std::lock_guard lock(*hooks_.mutex);
    if (PhaseChange change = hooks_.task->on_judged(admission, verdict, outcome)) {
      spdlog::error("[{}] {}", hooks_.task->spec().name, change.note);
    }
    if (outcome.kernel_id) children_.push_back(outcome.kernel_id);
    if (outcome.judged) {
      bool broken =
          outcome.verdict == Verdict::kCompileError || outcome.verdict == Verdict::kInvalidPlan;
      calls_.push_back(broken ? CallOutcome::kBrokenKernel : CallOutcome::kNewKernel);
    }
  }
  if (!outcome.judged) return {false, false, "evaluator_error", outcome.error};
  if (outcome.verified) {
    accepted_ = outcome.verified;
    return {true, false, "ok", ""};
  }
  return {false, true, verdict_name(outcome.verdict), outcome.detail};
}

}  // namespace kopt::orchestrator
