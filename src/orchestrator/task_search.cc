#include "src/orchestrator/task_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/utf8.h"
#include "memory_store/techniques.h"
#include "sandbox/kernel_file.h"
#include "src/orchestrator/candidate_evaluation.h"

namespace kopt::orchestrator {

namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return clip_utf8(line, 200);
}

}  // namespace

TaskSearch::TaskSearch(TaskSpec task, std::string reference, std::string baseline_file,
                       SearchLimits search_limits)
    : spec(std::move(task)),
      reference_source(std::move(reference)),
      baseline_source(std::move(baseline_file)),
      beam(search_limits.search.beam_width, search_limits.search.near_copy_similarity),
      stall(search_limits.stall),
      limits(std::move(search_limits)) {}

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
    double sol = std::clamp(best_sol_percent > 0 ? best_sol_percent : 1.0, 1.0, 100.0);
    gain = std::log(100.0 / sol);
  }
  return std::max(0.02, gain) * std::max(0.01, spec.priority);
}

TaskScore TaskSearch::score() const {
  return task_score(limits.search.score, best_sol_percent, baseline ? baseline->sol_us : 0,
                    baseline ? baseline->median_us : 0, production);
}

std::optional<std::string> TaskSearch::take_score_note() {
  if (score_fallback_said) return std::nullopt;
  TaskScore now = score();
  if (now.fallback.empty()) return std::nullopt;
  score_fallback_said = true;
  return fmt::format("S cannot be computed ({}): weights and stopping use %SOL (threshold {:.0f}%)",
                     now.fallback, limits.search.sol_threshold_percent);
}

double TaskSearch::fair_score() const {
  // Work done in dollars: the model's spend, plus a small price per GPU job so that a run
  // without a model (or before its first call) still shares the GPUs by weight.
  return (usage.cost_usd + kGpuJobUsd * static_cast<double>(jobs_started + 1)) / weight();
}

const char* phase_name(TaskSearch::Phase phase) {
  switch (phase) {
    case TaskSearch::Phase::kNeedsBaseline:
      return "waiting";
    case TaskSearch::Phase::kBaselineRunning:
      return "baseline";
    case TaskSearch::Phase::kSearching:
      return "searching";
    case TaskSearch::Phase::kDone:
      return "done";
    case TaskSearch::Phase::kFailed:
      return "failed";
    case TaskSearch::Phase::kParked:
      return "parked";
  }
  return "unknown";
}

TaskProgress TaskSearch::progress() const {
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

bool TaskSearch::update_phase(PhaseChange& change) {
  if (finished()) return false;
  auto finish = [&](std::string why) {
    phase = Phase::kDone;
    note = std::move(why);
    change = {PhaseChange::Kind::kDone, note};
    return false;
  };
  const SearchSettings& s = limits.search;
  if (TaskScore now = score(); now.uses_s) {
    if (now.s >= s.sol_score_threshold) {
      return finish(fmt::format("reached S {:.2f} against {} (threshold {:.2f})", now.s,
                                now.reference, s.sol_score_threshold));
    }
    // Near the bound, a task still slower than what users run goes on (its plateau ends it);
    // one at least as fast has little left to gain.
    if (best_sol_percent >= s.sol_threshold_percent && now.s >= 0.5) {
      return finish(
          fmt::format("reached {:.1f}% of speed of light, as fast as {} or faster (S {:.2f})",
                      best_sol_percent, now.reference, now.s));
    }
  } else if (best_sol_percent >= s.sol_threshold_percent) {
    return finish(fmt::format("reached {:.1f}% of speed of light", best_sol_percent));
  }
  if (limits.candidates_per_task && candidates >= *limits.candidates_per_task) {
    return finish(fmt::format("candidate budget of {} used", *limits.candidates_per_task));
  }
  if (limits.llm && plans_since_improvement >= s.plateau_plans) {
    return finish(fmt::format("plateau: {} model plans without a {:.0f}% gain",
                              plans_since_improvement, (s.min_improvement - 1) * 100));
  }
  if (limits.llm && since_improvement >= s.plateau_candidates) {
    return finish(fmt::format("plateau: {} candidates without a {:.0f}% gain", since_improvement,
                              (s.min_improvement - 1) * 100));
  }
  const auto& cap = limits.max_usd_per_task;
  if (limits.llm && cap && parked.empty() && usage.cost_usd >= *cap) {
    std::string why =
        fmt::format("its LLM budget of ${:.2f} is spent (${:.2f})", *cap, usage.cost_usd);
    if (park(why)) change = {PhaseChange::Kind::kParked, why};
  }
  return true;
}

std::optional<JobKind> TaskSearch::next_job(std::chrono::steady_clock::time_point now, bool llm_now,
                                            PhaseChange& change) {
  if (!update_phase(change)) return std::nullopt;
  if (phase == Phase::kNeedsBaseline) return JobKind::kBaseline;
  if (phase != Phase::kSearching) return std::nullopt;
  // A backed-off task leaves the model to the others until its time comes.
  bool task_llm = llm_now && parked.empty() && now >= llm_not_before;
  if (!warm_queue.empty()) return JobKind::kWarm;
  if (!tune_queue.empty()) return JobKind::kTune;
  if (task_llm && !code_queue.empty()) return JobKind::kCode;
  // The first plan starts from the best kernel known, so it waits for the warm start.
  bool warming = warm_in_flight > 0;
  if (task_llm && !plan_in_flight && code_queue.empty() && !beam.empty() && !warming) {
    return JobKind::kPlan;
  }
  if (in_flight == 0 && (!limits.llm || !parked.empty())) {
    phase = limits.llm ? Phase::kParked : Phase::kDone;
    note = limits.llm ? parked : "every tunable configuration tried";
    change = {limits.llm ? PhaseChange::Kind::kParked : PhaseChange::Kind::kDone, note};
  }
  return std::nullopt;
}

PhaseChange TaskSearch::on_result(const CandidateOutcome& outcome, bool tune_new_kernels) {
  if (!outcome.judged) {
    if (outcome.gpu_busy) return {};  // the GPU's fault, already retried and logged
    if (++evaluator_errors >= kMaxFailuresInARow && !finished()) {
      phase = Phase::kFailed;
      note = "the evaluator keeps failing: " + first_line(outcome.error);
      return {PhaseChange::Kind::kFailed, note};
    }
    return {};
  }
  evaluator_errors = 0;
  ++candidates;
  ++since_improvement;
  if (!outcome.verified) {
    ++failures;
    return {};
  }
  const VerifiedKernel& k = *outcome.verified;
  if (k.kernel_id && k.parent_id) parent_of[k.kernel_id] = *k.parent_id;
  if (k.speedup > best_speedup * limits.search.min_improvement) since_improvement = 0;
  if (k.speedup > best_speedup) {
    best_speedup = k.speedup;
    best_us = k.median_us;
  }
  best_sol_percent = std::max(best_sol_percent, k.sol_percent);
  bool entered = beam.offer(k);
  if (entered && tune_new_kernels && k.origin != "tuner") add_tune_target(k);
  return {};
}

SortedPlans TaskSearch::on_plans(std::vector<agents::Plan> plans, const VerifiedKernel& parent) {
  planner_failures = 0;
  if (parent.kernel_id && parent.parent_id) parent_of[parent.kernel_id] = *parent.parent_id;
  // The lineage: the parent and the kernels it came from, as far as this run knows them.
  std::vector<int64_t> lineage;
  for (int64_t id = parent.kernel_id; lineage.size() < 64;) {
    lineage.push_back(id);
    auto up = parent_of.find(id);
    if (up == parent_of.end()) break;
    id = up->second;
  }
  SortedPlans sorted;
  std::set<std::string> answer_keys;
  for (agents::Plan& plan : plans) {
    std::vector<std::string> techniques = memory::techniques_in(plan.title);
    std::string idea = techniques.empty() ? "title:" + agents::plan_key(plan.title)
                                          : "uses:" + fmt::format("{}", fmt::join(techniques, "+"));
    bool tried = false;
    for (int64_t id : lineage) tried = tried || plan_keys.count(std::to_string(id) + ":" + idea);
    // Two plans of one answer naming the same idea are one plan.
    if (tried || !answer_keys.insert(idea).second) {
      sorted.dropped.push_back(plan.title);
      continue;
    }
    sorted.fresh.push_back(std::move(plan));
  }
  for (const auto& idea : answer_keys)
    plan_keys.insert(std::to_string(parent.kernel_id) + ":" + idea);
  return sorted;
}

void TaskSearch::on_plan_done(bool improved) {
  plans_since_improvement = improved ? 0 : plans_since_improvement + 1;
}

double TaskSearch::parent_score(const VerifiedKernel& kernel) const {
  double best = std::max(best_speedup, beam.best() ? beam.best()->speedup : 1.0);
  auto it = plans_from.find(kernel.kernel_id);
  double tried = it == plans_from.end() ? 0 : it->second;
  double explore = std::sqrt(std::log(plans_asked + 1.0) / (tried + 1.0));
  return kernel.speedup / std::max(1e-9, best) + limits.search.exploration * explore;
}

VerifiedKernel TaskSearch::next_parent() {
  const auto& members = beam.members();  // fastest first: a tie goes to the faster
  size_t chosen = 0;
  for (size_t i = 1; i < members.size(); ++i) {
    if (parent_score(members[i]) > parent_score(members[chosen]) + 1e-12) chosen = i;
  }
  ++plans_from[members[chosen].kernel_id];
  ++plans_asked;
  return members[chosen];
}

int TaskSearch::coder_samples() const {
  const SearchSettings& s = limits.search;
  bool far = best_sol_percent > 0 && best_sol_percent < s.far_from_sol_percent;
  return far ? std::max(1, s.far_coder_samples) : 1;
}

bool TaskSearch::park(const std::string& why) {
  if (!parked.empty() || finished()) return false;
  parked = why;
  code_queue.clear();
  return true;
}

void TaskSearch::add_tune_target(const VerifiedKernel& kernel) {
  auto file = parse_kernel_file(kernel.source, "kernel.cu", &spec);
  if (!file) return;
  TunerSweep sweep(file->tunables, limits.search.tuner_max_configs);
  if (!sweep.has_space()) return;
  TunableConfig defaults = sweep.defaults();
  TuneTarget& target = tune_targets.emplace_back(
      TuneTarget{kernel, std::move(sweep), std::move(defaults), kernel.speedup});
  queue_next_tune_batch(target);
}

void TaskSearch::queue_next_tune_batch(TuneTarget& target) {
  for (TunableConfig& config : target.sweep.next_batch(target.best)) {
    tune_queue.push_back({&target, std::move(config)});
    ++target.queued;
  }
}

}  // namespace kopt::orchestrator
