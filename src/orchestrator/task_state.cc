#include "src/orchestrator/task_state.h"

#include <algorithm>

namespace kopt::orchestrator {

TaskState::TaskState(TaskSpec task, std::string reference, std::string baseline_file,
                     const SearchSettings& search, const StallSettings& stall_settings)
    : spec(std::move(task)),
      reference_source(std::move(reference)),
      baseline_source(std::move(baseline_file)),
      beam(search.beam_width, search.near_copy_similarity),
      stall(stall_settings) {}

double TaskState::weight() const {
  // A task near speed of light keeps a little weight so that it is never starved completely
  // while its plateau and threshold decide when it stops.
  double gain = best_sol_percent > 0 ? std::max(0.02, 1.0 - best_sol_percent / 100.0) : 1.0;
  return gain * std::max(0.01, spec.priority);
}

const char* phase_name(TaskState::Phase phase) {
  switch (phase) {
    case TaskState::Phase::kNeedsBaseline:
      return "waiting";
    case TaskState::Phase::kBaselineRunning:
      return "baseline";
    case TaskState::Phase::kSearching:
      return "searching";
    case TaskState::Phase::kDone:
      return "done";
    case TaskState::Phase::kFailed:
      return "failed";
    case TaskState::Phase::kParked:
      return "parked";
  }
  return "unknown";
}

TaskProgress TaskState::progress() const {
  TaskProgress p;
  p.name = spec.name;
  p.state = phase_name(phase);
  if (phase == Phase::kSearching && !tune_queue.empty() && code_queue.empty() && !plan_in_flight) {
    p.state = "tuning";
  }
  p.note = note;
  if (!parked.empty() && !finished()) {
    // Still tuning what it had, but the model is done with it: say why now, not at the end.
    p.state = "parked";
    p.note = parked;
  }
  p.best_speedup = best_speedup;
  p.best_sol_percent = best_sol_percent;
  p.best_us = best_us;
  p.candidates = candidates;
  p.failures = failures;
  p.repeats = repeats;
  p.llm_calls = usage.calls;
  p.in_flight = in_flight;
  p.tokens = usage.input_tokens + usage.output_tokens;
  p.cost_usd = usage.cost_usd;
  return p;
}

}  // namespace kopt::orchestrator
