// The coder: writes one complete kernel file (CUDA source and its kopt:plan launch plan) for one
// plan, and repairs it a bounded number of times when the judge says it does not compile or
// computes the wrong thing. The judge is a callback, so the coder never learns how candidates
// are compiled, verified or timed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agents/agent_call.h"
#include "agents/agent_context.h"
#include "agents/planner.h"
#include "common/result.h"

namespace kopt::agents {

// The judge's word on one attempt.
struct Judgement {
  bool accepted = false;   // compiled, verified (and timed): nothing to repair
  bool repairable = true;  // false: stop trying (shutting down, an infrastructure failure)
  std::string kind;        // "compile_error", "incorrect", "timeout", ...
  std::string detail;      // the compile log, the worst mismatch, the reason
};

using Judge = std::function<Judgement(const std::string& source, int attempt)>;

struct CoderOutcome {
  bool accepted = false;
  int attempts = 0;                   // kernels written (1 + repairs)
  std::string source;                 // the last kernel written ("" when none was)
  std::vector<std::string> failures;  // "compile_error: ...", one per failed attempt
  std::string error;                  // why no kernel could be written, when that happened
};

// The kernel file in the coder's answer: the ```cuda block (or the only block), which must
// hold a kopt:plan comment.
Result<std::string> extract_kernel_file(const std::string& reply);

class Coder {
 public:
  explicit Coder(AgentCaller& caller) : caller_(caller) {}

  // One kernel file for `plan`, improving context.current.
  Result<std::string> write(const WorkContext& context, const Plan& plan, AgentUsage& usage);

  // A repaired kernel file, given the failed `candidate` and the judge's verdict on it. The
  // prompt also shows the known-good kernel the plan started from (context.current, verified)
  // and the verdicts of this plan's `earlier_attempts`, so a repair can see what it broke and
  // what it already tried.
  Result<std::string> repair(const WorkContext& context, const Plan& plan,
                             const std::string& candidate, const Judgement& failure, int attempt,
                             int max_attempts, AgentUsage& usage,
                             const std::vector<std::string>& earlier_attempts = {});

  // write(), then judge and repair up to `max_repairs` times, until the judge accepts, says
  // repairing is pointless, or the repairs run out.
  CoderOutcome develop(const WorkContext& context, const Plan& plan, const Judge& judge,
                       int max_repairs, AgentUsage& usage);

 private:
  AgentCaller& caller_;
};

}  // namespace kopt::agents
