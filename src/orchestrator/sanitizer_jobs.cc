// The sanitizer off the critical path (issue 35): a would-be new best that beats its task's best
// by more than the noise is stored as "sanitizing" and handed to the sanitizer lane; the job that
// judged it goes on at once. Until the pass ends the kernel is a provisional best: it may seed
// children (the beam holds it), but no 'ok' row exists for export, and its pair (the win) waits.
// A pass that finds something takes it and its descendants out of the beam, said in the log.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "common/utf8.h"
#include "src/orchestrator/orchestrator.h"

namespace kopt::orchestrator {

namespace {
constexpr double kLaneEndWaitSeconds = 3;
constexpr double kWaitStepSeconds = 0.2;  // how often the wait for the lane looks at the budget
}  // namespace

CandidateOutcome Orchestrator::judge(TaskState& task, const CandidateInput& input) {
  CandidateOutcome outcome = candidates_->judge(input);
  if (outcome.noise_level && outcome.verified) {
    spdlog::info(
        "[{}] kernel {}: {:.2f} us is within the noise of the best {:.2f} us: not "
        "sanitized",
        task.spec().name, outcome.kernel_id, outcome.verified->median_us, input.best_us);
  }
  if (!outcome.provisional || !lane_) return outcome;
  {
    std::lock_guard lock(mutex_);
    provisional_.insert(outcome.kernel_id);
    provisional_outcomes_[outcome.kernel_id] = outcome;
  }
  spdlog::info(
      "[{}] kernel {} ({:.2f} us, best was {:.2f} us) is a provisional best: the "
      "sanitizer lane checks it",
      task.spec().name, outcome.kernel_id, outcome.verified ? outcome.verified->median_us : 0.0,
      input.best_us);
  submit_to_lane(task, outcome);
  return outcome;
}

void Orchestrator::submit_to_lane(TaskState& task, const CandidateOutcome& outcome) {
  double us = outcome.verified ? outcome.verified->median_us : 0;
  int64_t id = outcome.kernel_id;
  lane_->submit(
      *outcome.sanitize_request,
      [this, &task, outcome](const SanitizerOutcome& sanitized) {
        on_sanitized(task, outcome, sanitized);
      },
      [this, &task, us, id] {
        // Superseded: a faster provisional best of the task waits for its own pass. This one
        // stays provisional; should the faster one fail, it is queued again.
        std::lock_guard lock(mutex_);
        if (task.sanitizer_tainted(id)) return false;
        for (const auto& [other, o] : provisional_outcomes_) {
          if (other != id && o.kernel_record.task == task.spec().name && o.verified &&
              o.verified->median_us < us)
            return false;
        }
        return true;
      });
}

void Orchestrator::on_sanitized(TaskState& task, const CandidateOutcome& outcome,
                                const SanitizerOutcome& sanitized) {
  bool passed = candidates_->settle_provisional(outcome, sanitized);
  std::vector<HeldPair> pairs;
  std::optional<CandidateOutcome> again;
  {
    std::lock_guard lock(mutex_);
    provisional_.erase(outcome.kernel_id);
    provisional_outcomes_.erase(outcome.kernel_id);
    if (auto it = held_pairs_.find(outcome.kernel_id); it != held_pairs_.end()) {
      pairs = std::move(it->second);
      held_pairs_.erase(it);
    }
    if (!passed) {
      std::vector<int64_t> dropped = task.on_sanitizer_failed(outcome.kernel_id);
      std::vector<std::string> ids;
      for (int64_t id : dropped) ids.push_back(std::to_string(id));
      spdlog::warn(
          "[{}] kernel {} failed the sanitizer ({}): it is no best and no win; {}; the best is "
          "{:.2f}x again",
          task.spec().name, outcome.kernel_id, first_line_clipped(sanitized.finding->describe()),
          ids.empty() ? std::string("no descendant of it was in the beam")
                      : "its descendants " + join(ids, ", ") + " are dropped from the beam",
          task.best_speedup());
      // The best that is left may be a provisional one whose pass was skipped as superseded.
      const VerifiedKernel* best = task.beam().best();
      if (best && provisional_outcomes_.count(best->kernel_id)) {
        again = provisional_outcomes_.at(best->kernel_id);
      }
    }
  }
  if (again) {
    spdlog::info("[{}] kernel {} is the best again: the sanitizer lane checks it", task.spec().name,
                 again->kernel_id);
    submit_to_lane(task, *again);
  }
  if (!passed) return;
  spdlog::info("[{}] kernel {} passed the sanitizer: {}", task.spec().name, outcome.kernel_id,
               sanitized.ran ? sanitized.note : "not run (" + sanitized.note + ")");
  // The pairs that waited for this pass; one whose parent failed meanwhile is dropped there.
  for (const HeldPair& p : pairs) record_pair(task, p.parent, p.kernel, p.lesson);
}

bool Orchestrator::hold_pair(TaskState& task, const VerifiedKernel& parent,
                             const VerifiedKernel& kernel, const std::string& lesson) {
  if (task.sanitizer_tainted(kernel.kernel_id) || task.sanitizer_tainted(parent.kernel_id))
    return true;  // dropped: a kernel that failed the sanitizer is in no pair
  if (!provisional_.count(kernel.kernel_id)) return false;
  held_pairs_[kernel.kernel_id].push_back({parent, kernel, lesson});
  return true;
}

// The night's provisional bests are its results: with the search over and time left, the lane
// checks them, beside no timer now, instead of the end's few seconds (a tuner-only night on an
// H200 that judged every configuration in 71 s of its 160 left ten would-be bests 'sanitizing',
// never exported). The time budget and a stop still end the night (check_stop_conditions).
bool Orchestrator::sanitize_what_is_left() {
  if (!lane_ || lane_->pending() == 0) return false;
  const double done_at = elapsed_seconds();
  std::string bound;
  if (options_.budgets.hours) {
    double left = std::max(0.0, *options_.budgets.hours * 3600 - done_at);
    bound = fmt::format(" (within the time budget: {:.0f} s left)", left);
  }
  {
    std::lock_guard lock(mutex_);
    search_done_at_ = done_at;  // the live table and `kopt status` say why the run goes on
  }
  spdlog::info(
      "search done at {:.0f} s: the sanitizer lane checks the {} provisional best(s) "
      "left before the night ends{}",
      done_at, lane_->pending(), bound);
  publish_progress(true);
  auto started = Clock::now();
  auto a_task_joined = [this] {
    if (all_done()) return false;
    search_goes_on();
    return true;
  };
  while (!lane_->wait_idle(kWaitStepSeconds)) {
    check_stop_conditions();
    if (stopping()) break;
    poll_submissions();
    if (a_task_joined()) return true;
    publish_progress(false);
  }
  if (!stopping()) {
    take_submissions();  // one submitted since the last poll (they come every 2 s) still counts
    if (a_task_joined()) return true;
  }
  std::string cut;
  if (stopping()) {
    std::lock_guard lock(mutex_);
    cut = " (cut: " + stop_reason_ + ")";
  }
  // bench/daemon_throughput.py reads the seconds: the night's search ended before them.
  spdlog::info("the sanitizer lane's check of what the search left took {:.1f} s{}",
               std::chrono::duration<double>(Clock::now() - started).count(), cut);
  return false;
}

// A task submitted while the lane checked: the run searches again (the lane goes on beside it),
// so neither the run's end nor the display says the search is done.
void Orchestrator::search_goes_on() {
  {
    std::lock_guard lock(mutex_);
    search_done_at_.reset();
    stop_reason_.clear();
  }
  spdlog::info(
      "a submitted task joined while the sanitizer lane checked what the search left: "
      "the search goes on");
  publish_progress(true);
}

int Orchestrator::finish_sanitizer_lane(Clock::time_point deadline) {
  if (!lane_) return 0;
  int queued = 0;
  {
    std::lock_guard lock(mutex_);
    queued = static_cast<int>(provisional_.size());
  }
  lane_->stop();
  double left = std::chrono::duration<double>(deadline - Clock::now()).count();
  // A pass takes half a minute: the night ends on time instead, its kernel staying provisional.
  bool idle = lane_->wait_idle(std::clamp(left, 0.0, kLaneEndWaitSeconds));
  std::lock_guard lock(mutex_);
  if (!provisional_.empty()) {
    std::vector<std::string> ids;
    for (int64_t id : provisional_) ids.push_back(std::to_string(id));
    spdlog::warn(
        "{} provisional bests were not sanitized before the end (kernels {}): they stay "
        "'sanitizing', never exported nor shown as wins",
        provisional_.size(), join(ids, ", "));
  }
  spdlog::info(
      "sanitizer lane: {} passes ({:.0f} s of tools), {} skipped as superseded, {} "
      "kernels waited at the end",
      lane_->runs(), lane_->busy_seconds(), lane_->skipped(), queued);
  return idle ? 0 : lane_->pending();
}

}  // namespace kopt::orchestrator
