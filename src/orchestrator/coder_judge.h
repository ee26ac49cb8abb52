// The coder's judge for one plan (agents::Judge): asks the task's search whether a kernel the
// coder wrote is new (TaskSearch::admit), has it judged without holding the lock, and reports
// the verdict (TaskSearch::on_judged). It keeps what the coder's job needs at its end: the
// accepted kernel, the kernels judged, and one call outcome per answer for the stall detector.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/coder.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/stall_detector.h"
#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

// "ok 1.520x (6.58 us, 71.2% SOL)", "incorrect: out[3] ...", "no verdict: ...": one line.
std::string describe_result(const CandidateOutcome& outcome);

class CoderJudge {
 public:
  struct Hooks {
    std::mutex* mutex = nullptr;  // guards the task's search
    TaskSearch* task = nullptr;
    std::function<bool()> stopping;
    // Judges a kernel of attempt `attempt` (1: the coder's first, later: repairs); called
    // without the mutex.
    std::function<CandidateOutcome(const std::string& source, int attempt)> evaluate;
  };

  CoderJudge(Hooks hooks, std::string plan_title)
      : hooks_(std::move(hooks)), plan_title_(std::move(plan_title)) {}

  agents::Judgement operator()(const std::string& source, int attempt);

  const std::optional<VerifiedKernel>& accepted() const { return accepted_; }
  const std::vector<int64_t>& children() const { return children_; }
  const std::vector<CallOutcome>& calls() const { return calls_; }
  int64_t answers() const { return answers_; }

 private:
  // Admits the kernel under the lock; a refusal is the coder's answer.
  std::optional<agents::Judgement> refuse(const std::string& source, int attempt,
                                          Admission& admission);

  Hooks hooks_;
  std::string plan_title_;
  std::optional<VerifiedKernel> accepted_;
  std::vector<int64_t> children_;   // the kernels judged for this plan
  std::vector<CallOutcome> calls_;  // one per answer that held a kernel file
  int64_t answers_ = 0;
};

}  // namespace kopt::orchestrator
