// What a resumed run takes over from the run it continues, besides its kernels (restore_task in
// search_jobs.cc): which tasks were finished, and which folders it refused. A resume continues
// what was unfinished and nothing else: a task that was done, failed or parked (a stalled model,
// a spent per-task budget) stays so, and spends no LLM call.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "src/orchestrator/orchestrator.h"

namespace kopt::orchestrator {

namespace {

// A log line holds one line: a reason's further lines ("did you mean") follow after "; ".
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "; ";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Orchestrator::refuse_task(const std::string& dir, const std::string& reason) {
  spdlog::error("task {} refused: {}", dir, one_line(reason));
  std::lock_guard lock(mutex_);
  for (const RefusedTask& r : refused_) {
    if (r.dir == dir && r.reason == reason) return;
  }
  refused_.push_back({dir, reason});
}

void Orchestrator::keep_finished_phases(const RunProgress& before) {
  // A run that ended on its own (every task done or parked) left nothing for the tuner either;
  // an interrupted one may have left a parked task's tuner queue.
  const bool ended = before.state == "finished";
  std::lock_guard lock(mutex_);
  for (TaskState& task : tasks_) {
    auto was = std::find_if(before.tasks.begin(), before.tasks.end(),
                            [&](const TaskProgress& p) { return p.name == task.spec().name; });
    if (was == before.tasks.end()) continue;
    // The task's LLM use so far, so that its per-task cap and the table count the whole run.
    agents::AgentUsage earlier;
    earlier.calls = was->llm_calls;
    earlier.input_tokens = was->tokens;
    earlier.cost_usd = was->cost_usd;
    task.charge(earlier);
    if (task.finished()) continue;
    if (was->state == "done" || was->state == "failed") {
      task.keep_phase(was->state == "done" ? TaskState::Phase::kDone : TaskState::Phase::kFailed,
                      was->note);
    } else if (was->state == "parked") {
      task.park(was->note);
      if (ended) task.keep_phase(TaskState::Phase::kParked, was->note);
    } else {
      continue;
    }
    spdlog::info("[{}] stays {} as before the resume: {}", task.spec().name, was->state,
                 was->note.empty() ? std::string("(no reason recorded)") : was->note);
  }
}

}  // namespace kopt::orchestrator
