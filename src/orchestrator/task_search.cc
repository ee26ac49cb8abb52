#include "src/orchestrator/task_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "common/enum_names.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "memory_store/techniques.h"
#include "sandbox/kernel_file.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/kernel_fingerprint.h"

namespace kopt::orchestrator {

TaskSearch::TaskSearch(TaskSpec task, std::string reference, std::string baseline_file,
                       SearchLimits search_limits)
    : spec_(std::move(task)),
      reference_source_(std::move(reference)),
      baseline_source_(std::move(baseline_file)),
      beam_(search_limits.search.beam_width, search_limits.search.near_copy_similarity),
      stall_(search_limits.stall),
      limits_(std::move(search_limits)) {}

double TaskSearch::weight() const {
  // log(1 / SOL share): a GEMM at 2% gets ln(50) = 3.9, a softmax at 45% ln(2.2) = 0.8, so the
  // task with the most to gain gets about five times the share, not 1.8 times as with 1 - SOL.
  // Unknown (no baseline yet) counts as 1% SOL; a task near speed of light keeps a little weight
  // so that it is never starved while its plateau and threshold decide when it stops.
  double gain = 0;
  if (TaskScore now = score(); now.uses_s) {
    // log(1 / S) = log(1 + (T_k - T_SOL) / (T_b - T_SOL)) has the form of log(100 / %SOL) =
    // log(1 + (T_k - T_SOL) / T_SOL), the gap measured against the reference's own instead of
    // the bound's: the two agree for a reference at 50% SOL, so tasks judged either way share a
    // night on one scale. S under 0.01 counts as 0.01, as %SOL under 1% counts as 1%.
    gain = std::log(1.0 / std::clamp(now.s, 0.01, 1.0));
  } else {
    double sol = std::clamp(best_sol_percent_ > 0 ? best_sol_percent_ : 1.0, 1.0, 100.0);
    gain = std::log(100.0 / sol);
  }
  return std::max(0.02, gain) * std::max(0.01, spec_.priority);
}

TaskScore TaskSearch::score() const {
  return task_score(limits_.search.score, best_sol_percent_, baseline_ ? baseline_->sol_us : 0,
                    baseline_ ? baseline_->median_us : 0, production_);
}

std::optional<std::string> TaskSearch::take_score_note() {
  if (score_fallback_said_) return std::nullopt;
  TaskScore now = score();
  if (now.fallback.empty()) return std::nullopt;
  score_fallback_said_ = true;
  return fmt::format("S cannot be computed ({}): weights and stopping use %SOL (threshold {:.0f}%)",
                     now.fallback, limits_.search.sol_threshold_percent);
}

double TaskSearch::fair_score() const {
  // Work done in dollars: the model's spend, plus a small price per GPU job so that a run
  // without a model (or before its first call) still shares the GPUs by weight.
  return (usage_.cost_usd + kGpuJobUsd * static_cast<double>(jobs_started_ + 1)) / weight();
}

constexpr EnumNameTable<TaskSearch::Phase, 6> kPhaseNames = {{
    {TaskSearch::Phase::kNeedsBaseline, "waiting"},
    {TaskSearch::Phase::kBaselineRunning, "baseline"},
    {TaskSearch::Phase::kSearching, "searching"},
    {TaskSearch::Phase::kDone, "done"},
    {TaskSearch::Phase::kFailed, "failed"},
    {TaskSearch::Phase::kParked, "parked"},
}};
static_assert(names_each_enumerator(kPhaseNames, TaskSearch::Phase::kParked));

const char* phase_name(TaskSearch::Phase phase) { return enum_name(kPhaseNames, phase, "unknown"); }

TaskProgress TaskSearch::progress() const {
  TaskProgress p;
  p.name = spec_.name;
  p.state = phase_name(phase_);
  if (phase_ == Phase::kSearching && !tune_queue_.empty() && code_queue_.empty() &&
      !plan_in_flight_) {
    p.state = "tuning";
  }
  p.note = note_;
  if (!parked_.empty() && !finished()) {
    // Still tuning what it had, but the model is done with it: say why now, not at the end.
    p.state = "parked";
    p.note = parked_;
  }
  p.best_speedup = best_speedup_;
  p.best_sol_percent = best_sol_percent_;
  p.best_us = best_us_;
  p.candidates = candidates_;
  p.failures = failures_;
  p.repeats = repeats_;
  p.llm_calls = usage_.calls;
  p.in_flight = in_flight_;
  p.tokens = usage_.input_tokens + usage_.output_tokens;
  p.cost_usd = usage_.cost_usd;
  return p;
}

const KnownKernel* TaskSearch::known(const std::string& fingerprint) const {
  auto it = known_kernels_.find(fingerprint);
  return it == known_kernels_.end() ? nullptr : &it->second;
}

bool TaskSearch::judged(const std::string& source) const {
  std::string sha = sha256_hex(source);
  return judged_sources_.count(sha) > 0 || earlier_sources_.count(sha) > 0;
}

void TaskSearch::remember(const std::string& source, int64_t kernel_id,
                          const std::string& verdict) {
  judged_sources_.insert(sha256_hex(source));
  known_kernels_[kernel_fingerprint(source)] = {kernel_id, verdict};
}

bool TaskSearch::finish(std::string why, PhaseChange& change) {
  phase_ = Phase::kDone;
  note_ = std::move(why);
  change = {PhaseChange::Kind::kDone, note_};
  return false;
}

bool TaskSearch::update_phase(PhaseChange& change) {
  if (finished()) return false;
  const SearchSettings& s = limits_.search;
  if (TaskScore now = score(); now.uses_s) {
    if (now.s >= s.sol_score_threshold) {
      return finish(fmt::format("reached S {:.2f} against {} (threshold {:.2f})", now.s,
                                now.reference, s.sol_score_threshold),
                    change);
    }
    // Near the bound, a task still slower than what users run goes on (its plateau ends it);
    // one at least as fast has little left to gain.
    if (best_sol_percent_ >= s.sol_threshold_percent && now.s >= 0.5) {
      return finish(
          fmt::format("reached {:.1f}% of speed of light, as fast as {} or faster (S {:.2f})",
                      best_sol_percent_, now.reference, now.s),
          change);
    }
  } else if (best_sol_percent_ >= s.sol_threshold_percent) {
    return finish(fmt::format("reached {:.1f}% of speed of light", best_sol_percent_), change);
  }
  if (limits_.candidates_per_task && candidates_ >= *limits_.candidates_per_task) {
    return finish(fmt::format("candidate budget of {} used", *limits_.candidates_per_task), change);
  }
  if (limits_.llm && plans_since_improvement_ >= plateau_limit()) {
    return finish(fmt::format("plateau: {} model plans without a {:.0f}% gain{}",
                              plans_since_improvement_, (s.min_improvement - 1) * 100,
                              strategy_changes_ > 0 ? ", after a change of strategy" : ""),
                  change);
  }
  if (limits_.llm && since_improvement_ >= s.plateau_candidates) {
    return finish(fmt::format("plateau: {} candidates without a {:.0f}% gain", since_improvement_,
                              (s.min_improvement - 1) * 100),
                  change);
  }
  const auto& cap = limits_.max_usd_per_task;
  if (limits_.llm && cap && parked_.empty() && usage_.cost_usd >= *cap) {
    std::string why =
        fmt::format("its LLM budget of ${:.2f} is spent (${:.2f})", *cap, usage_.cost_usd);
    if (park(why)) change = {PhaseChange::Kind::kParked, why};
  }
  return true;
}

std::optional<JobKind> TaskSearch::next_job(std::chrono::steady_clock::time_point now, bool llm_now,
                                            PhaseChange& change) {
  if (!update_phase(change)) return std::nullopt;
  if (phase_ == Phase::kNeedsBaseline) return JobKind::kBaseline;
  if (phase_ != Phase::kSearching) return std::nullopt;
  // A backed-off task leaves the model to the others until its time comes.
  bool task_llm = llm_now && parked_.empty() && now >= llm_not_before_;
  if (!warm_queue_.empty()) return JobKind::kWarm;
  if (!tune_queue_.empty()) return JobKind::kTune;
  if (task_llm && !code_queue_.empty()) return JobKind::kCode;
  // The first plan starts from the best kernel known, so it waits for the warm start.
  bool warming = warm_in_flight_ > 0;
  if (task_llm && !plan_in_flight_ && code_queue_.empty() && !beam_.empty() && !warming) {
    return JobKind::kPlan;
  }
  if (in_flight_ == 0 && (!limits_.llm || !parked_.empty())) {
    phase_ = limits_.llm ? Phase::kParked : Phase::kDone;
    note_ = limits_.llm ? parked_ : "every tunable configuration tried";
    change = {limits_.llm ? PhaseChange::Kind::kParked : PhaseChange::Kind::kDone, note_};
  }
  return std::nullopt;
}

TakenJob TaskSearch::take_job(JobKind kind) {
  TakenJob job{.kind = kind};
  switch (kind) {
    case JobKind::kBaseline:
      phase_ = Phase::kBaselineRunning;
      break;
    case JobKind::kWarm:
      job.warm = std::move(warm_queue_.front());
      warm_queue_.pop_front();
      ++warm_in_flight_;
      break;
    case JobKind::kTune:
      job.tune = tune_queue_.front();
      tune_queue_.pop_front();
      --job.tune->target->queued;
      ++job.tune->target->in_flight;
      break;
    case JobKind::kCode:
      job.code = std::move(code_queue_.front());
      code_queue_.pop_front();
      break;
    case JobKind::kPlan:
      plan_in_flight_ = true;
      break;
  }
  ++in_flight_;
  ++jobs_started_;
  return job;
}

PhaseChange TaskSearch::on_result(const CandidateOutcome& outcome, bool tune_new_kernels) {
  if (!outcome.judged) {
    if (outcome.gpu_busy) return {};  // the GPU's fault, already retried and logged
    if (++evaluator_errors_ >= kMaxFailuresInARow && !finished()) {
      phase_ = Phase::kFailed;
      note_ = "the evaluator keeps failing: " + first_line_clipped(outcome.error);
      return {PhaseChange::Kind::kFailed, note_};
    }
    return {};
  }
  evaluator_errors_ = 0;
  ++candidates_;
  ++since_improvement_;
  if (!outcome.verified) {
    ++failures_;
    return {};
  }
  const VerifiedKernel& k = *outcome.verified;
  if (k.kernel_id && k.parent_id) parent_of_[k.kernel_id] = *k.parent_id;
  if (k.baseline_us > 0) latest_baseline_us_ = k.baseline_us;
  // Its sanitizer pass may have ended (with a finding) before this verdict arrived here.
  if (sanitizer_tainted(k.kernel_id)) {
    ++failures_;
    return {};
  }
  // A screened kernel never had the whole gate: a seed for the beam (a model's new kernel is
  // tuned from there: its defaults may be what made it slow), never the task's best.
  if (k.screened) {
    if (beam_.offer(k) && tune_new_kernels && k.origin != Origin::kTuner) add_tune_target(k);
    return {};
  }
  if (k.speedup > best_speedup_ * limits_.search.min_improvement) since_improvement_ = 0;
  if (k.speedup > best_speedup_) {
    best_speedup_ = k.speedup;
    best_us_ = k.median_us;
    best_noise_ = k.noise;
  }
  best_sol_percent_ = std::max(best_sol_percent_, k.sol_percent);
  bool entered = beam_.offer(k);
  if (entered && tune_new_kernels && k.origin != Origin::kTuner) add_tune_target(k);
  return {};
}

bool TaskSearch::sanitizer_tainted(int64_t kernel_id) const {
  if (sanitizer_failed_.empty()) return false;
  for (int64_t id : lineage(kernel_id))
    if (sanitizer_failed_.count(id)) return true;
  return false;
}

std::vector<int64_t> TaskSearch::on_sanitizer_failed(int64_t kernel_id) {
  sanitizer_failed_.insert(kernel_id);
  std::vector<int64_t> removed =
      beam_.remove_if([&](const VerifiedKernel& k) { return sanitizer_tainted(k.kernel_id); });
  removed.erase(std::remove(removed.begin(), removed.end(), kernel_id), removed.end());
  // The best is what is left: the beam's best, else the baseline.
  const VerifiedKernel* best = beam_.best() ? beam_.best() : (baseline_ ? &*baseline_ : nullptr);
  if (best) {
    best_speedup_ = best->speedup;
    best_us_ = best->median_us;
    best_noise_ = best->noise;
  }
  return removed;
}

int TaskSearch::plateau_limit() const {
  // A task far from its bound (or from what users run) earns more plans before it counts as
  // stuck: plateau_plans at a headroom of log 2 (S 0.5, or 50% SOL), up to four times that.
  double gain = weight() / std::max(0.01, spec_.priority);
  double scale = std::clamp(gain / std::log(2.0), 1.0, 4.0);
  return static_cast<int>(std::lround(limits_.search.plateau_plans * scale));
}

void TaskSearch::on_plan_done(bool improved) {
  if (improved) {
    plans_since_improvement_ = 0;
    return;
  }
  ++plans_since_improvement_;
  // Stagnation changes strategy before it stops the task: the next plans start from the
  // least-explored beam kernel and the planner is asked for radically different ideas.
  if (strategy_changes_ == 0 && plans_since_improvement_ >= plateau_limit()) {
    ++strategy_changes_;
    plans_since_improvement_ = 0;
    plans_from_.clear();
    plans_asked_ = 0;
    planner_note_ =
        "The last plans brought no gain: propose radically different approaches (another "
        "algorithm, data layout or parallel decomposition), not refinements of the tried ones.";
  }
}

double TaskSearch::parent_score(const VerifiedKernel& kernel) const {
  double best = std::max(best_speedup_, beam_.best() ? beam_.best()->speedup : 1.0);
  auto it = plans_from_.find(kernel.kernel_id);
  double tried = it == plans_from_.end() ? 0 : it->second;
  double explore = std::sqrt(std::log(plans_asked_ + 1.0) / (tried + 1.0));
  // After a change of strategy the beam's other kernels weigh more.
  double exploration = limits_.search.exploration * (1 + strategy_changes_);
  return kernel.speedup / std::max(1e-9, best) + exploration * explore;
}

VerifiedKernel TaskSearch::next_parent() {
  const auto& members = beam_.members();  // fastest first: a tie goes to the faster
  size_t chosen = 0;
  for (size_t i = 1; i < members.size(); ++i) {
    if (parent_score(members[i]) > parent_score(members[chosen]) + 1e-12) chosen = i;
  }
  ++plans_from_[members[chosen].kernel_id];
  ++plans_asked_;
  return members[chosen];
}

int TaskSearch::coder_samples() const {
  const SearchSettings& s = limits_.search;
  bool far = best_sol_percent_ > 0 && best_sol_percent_ < s.far_from_sol_percent;
  return far ? std::max(1, s.far_coder_samples) : 1;
}

bool TaskSearch::park(const std::string& why) {
  if (!parked_.empty() || finished()) return false;
  parked_ = why;
  code_queue_.clear();
  return true;
}

void TaskSearch::back_off(std::chrono::steady_clock::time_point until, double temperature_step) {
  llm_not_before_ = until;
  temperature_boost_ += temperature_step;
  ++memory_rotation_;
}

void TaskSearch::add_tune_target(const VerifiedKernel& kernel) {
  auto file = parse_kernel_file(kernel.source, "kernel.cu", &spec_);
  if (!file) return;
  TunerSweep sweep(file->tunables, limits_.search.tuner_max_configs);
  if (!sweep.has_space()) return;
  TunableConfig defaults = sweep.defaults();
  TuneTarget& target = tune_targets_.emplace_back(
      TuneTarget{kernel, std::move(sweep), std::move(defaults), kernel.speedup});
  // Configurations an earlier night judged count as tried; the best of them steers the sweep.
  if (auto earlier = earlier_tunes_.find(kernel.kernel_id); earlier != earlier_tunes_.end()) {
    for (const auto& [config, speedup] : earlier->second) {
      target.sweep.record(config, speedup);
      count_tune(target, speedup);
      if (speedup > target.best_speedup) {
        target.best = config;
        target.best_speedup = speedup;
      }
    }
  }
  spdlog::info("[{}] tuning kernel {}: {} of {} ({}) judged before, up to {} more", spec_.name,
               kernel.kernel_id, target.judged, describe_space(target.sweep),
               join(tunable_names(target.sweep), ", "),
               std::max(0, limits_.search.tuner_max_configs - target.judged));
  queue_next_tune_batch(target);
}

void TaskSearch::count_tune(TuneTarget& target, double speedup) {
  ++target.judged;
  if (speedup <= 0) return;
  ++target.correct;
  if (target.slowest_speedup <= 0 || speedup < target.slowest_speedup)
    target.slowest_speedup = speedup;
}

std::vector<std::string> TaskSearch::tuner_facts(size_t max_lines) const {
  std::vector<std::string> lines;
  for (auto it = tune_targets_.rbegin(); it != tune_targets_.rend() && lines.size() < max_lines;
       ++it) {
    const TuneTarget& t = *it;
    if (t.judged == 0) continue;
    std::string line = fmt::format(
        "kernel {}: {} of its {} ({}) judged ({} correct); its default {} runs at "
        "{:.2f}x over the baseline, the best, {}, at {:.2f}x",
        t.root.kernel_id, t.judged, describe_space(t.sweep), join(tunable_names(t.sweep), ", "),
        t.correct, describe_config(t.sweep.defaults()), t.root.speedup, describe_config(t.best),
        t.best_speedup);
    if (t.slowest_speedup > 0)
      line += fmt::format(", the slowest correct one at {:.2f}x", t.slowest_speedup);
    lines.push_back(line);
  }
  return lines;
}

void TaskSearch::queue_next_tune_batch(TuneTarget& target) {
  for (TunableConfig& config : target.sweep.next_batch(target.best)) {
    tune_queue_.push_back({&target, std::move(config)});
    ++target.queued;
  }
}

}  // namespace kopt::orchestrator
