// What `kopt run --resume` decides before any work: a run that ended with every task done or
// parked has nothing to resume (unless tasks are named or were submitted since), and the
// submissions a resume will take are said, never taken silently.
#pragma once

#include <string>
#include <vector>

#include "memory_store/records.h"
#include "src/orchestrator/daemon_tables.h"

namespace kopt::orchestrator {

struct ResumePlan {
  bool nothing_to_resume = false;
  std::string message;  // for the user (stdout when nothing is resumed, stderr otherwise)
};

// `last`: the run --resume would continue; `tasks_named`: --tasks was given; `waiting`: the
// submissions no run has taken yet.
ResumePlan plan_resume(const memory::RunRecord& last, bool tasks_named,
                       const std::vector<Submission>& waiting);

}  // namespace kopt::orchestrator
