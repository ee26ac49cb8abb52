// The verbs a job reports through (task_search.h): the baseline and the warm start, the tuner's
// configurations, the planner's answers and the coder's kernels. Each changes the task's search
// state and returns what the orchestrator should log; none runs a job or takes a lock.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/sha256.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "memory_store/techniques.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/kernel_fingerprint.h"
#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

namespace {

bool is_verified(const std::string& outcome) { return outcome.rfind("verified", 0) == 0; }

// A parent's numbers next to its child's, for the refinement turn: where the child lost.
std::string against_parent(const VerifiedKernel& parent, const VerifiedKernel& child) {
  std::string text =
      fmt::format("Its parent ran {:.2f} us ({:.1f}% SOL); it runs {:.2f} us ({:.1f}% SOL).",
                  parent.median_us, parent.sol_percent, child.median_us, child.sol_percent);
  if (parent.resources && child.resources) {
    text += fmt::format(" Registers {} -> {}, occupancy {:.0f}% -> {:.0f}%.",
                        parent.resources->registers, child.resources->registers,
                        parent.resources->occupancy * 100, child.resources->occupancy * 100);
  }
  if (parent.profile && child.profile) {
    text += fmt::format(" DRAM throughput {:.0f}% -> {:.0f}%, SM throughput {:.0f}% -> {:.0f}%.",
                        parent.profile->dram_percent, child.profile->dram_percent,
                        parent.profile->sm_percent, child.profile->sm_percent);
  } else if (parent.profile) {
    text += fmt::format(" The parent's counters: DRAM throughput {:.0f}%, SM throughput {:.0f}%.",
                        parent.profile->dram_percent, parent.profile->sm_percent);
  }
  return text;
}

}  // namespace

std::string plan_idea(const std::string& title) {
  std::vector<std::string> techniques = memory::techniques_in(title);
  return techniques.empty() ? "title:" + agents::plan_key(title)
                            : "uses:" + fmt::format("{}", fmt::join(techniques, "+"));
}

PhaseChange TaskSearch::on_baseline(const CandidateOutcome& outcome) {
  remember(baseline_source_, outcome.kernel_id, "the task's baseline");
  if (!outcome.judged || !outcome.verified) {
    phase_ = Phase::kFailed;
    note_ = !outcome.judged ? "no verdict on the baseline: " + first_line_clipped(outcome.error)
                            : "the baseline does not verify: " + verdict_name(outcome.verdict) +
                                  ": " + first_line_clipped(outcome.detail);
    return {PhaseChange::Kind::kFailed, note_};
  }
  const VerifiedKernel& k = *outcome.verified;
  baseline_ = k;
  beam_.offer(k);
  best_speedup_ = 1.0;
  best_us_ = k.median_us;
  latest_baseline_us_ = k.median_us;
  best_sol_percent_ = k.sol_percent;
  phase_ = Phase::kSearching;
  add_tune_target(k);
  return {};
}

void TaskSearch::add_warm_start(std::vector<WarmKernel> kernels) {
  for (WarmKernel& k : kernels) warm_queue_.push_back(std::move(k));
}

bool TaskSearch::claim_warm(const WarmKernel& kernel, bool stopping) {
  // Only this run's judgements count here: earlier nights' are what the warm start re-verifies.
  bool skip = stopping || finished() || !judged_sources_.insert(sha256_hex(kernel.source)).second;
  if (skip) --warm_in_flight_;
  return !skip;
}

PhaseChange TaskSearch::on_warm_judged(const WarmKernel& kernel, const std::string& verdict,
                                       const CandidateOutcome& outcome) {
  PhaseChange change = on_result(outcome);
  remember(kernel.source, outcome.kernel_id, verdict);
  --warm_in_flight_;
  return change;
}

void TaskSearch::tune_slot_freed(TuneTarget& target, bool stopping) {
  --target.in_flight;
  if (target.queued == 0 && target.in_flight == 0 && !stopping) queue_next_tune_batch(target);
}

std::optional<std::string> TaskSearch::claim_tune(const TuneItem& item, bool stopping) {
  auto source = with_default_tunables(item.target->root.source, item.config);
  const bool over_budget =
      limits_.candidates_per_task && candidates_ + tunes_in_flight_ >= *limits_.candidates_per_task;
  bool skip = !source || stopping || finished() || over_budget || judged(*source);
  if (skip) {
    tune_slot_freed(*item.target, stopping);
    return std::nullopt;
  }
  judged_sources_.insert(sha256_hex(*source));
  ++tunes_in_flight_;
  return *source;
}

PhaseChange TaskSearch::on_tune_judged(const TuneItem& item, const std::string& source,
                                       const std::string& verdict, const CandidateOutcome& outcome,
                                       bool stopping) {
  --tunes_in_flight_;
  PhaseChange change = on_result(outcome);
  remember(source, outcome.kernel_id, verdict);
  TuneTarget& target = *item.target;
  count_tune(target, outcome.verified ? outcome.verified->speedup : 0);
  target.sweep.record(item.config, outcome.verified ? outcome.verified->speedup : 0);
  if (outcome.verified && outcome.verified->speedup > target.best_speedup) {
    target.best = item.config;
    target.best_speedup = outcome.verified->speedup;
  }
  tune_slot_freed(target, stopping);
  return change;
}

std::optional<VerifiedKernel> TaskSearch::begin_plan(bool stopping) {
  if (stopping || finished() || beam_.empty() || !parked_.empty()) {
    plan_in_flight_ = false;
    return std::nullopt;
  }
  return next_parent();
}

std::vector<int64_t> TaskSearch::lineage(int64_t kernel_id) const {
  std::vector<int64_t> ids;
  for (int64_t id = kernel_id; ids.size() < 64;) {
    ids.push_back(id);
    auto up = parent_of_.find(id);
    if (up == parent_of_.end()) break;
    id = up->second;
  }
  return ids;
}

std::string TaskSearch::idea_note(const std::vector<int64_t>& ids, const std::string& idea) const {
  for (int64_t id : ids) {
    auto tried = tried_from_.find(std::to_string(id) + ":" + idea);
    if (tried == tried_from_.end()) continue;
    for (auto it = tried->second.rbegin(); it != tried->second.rend(); ++it) {
      if (*it == "queued" || is_verified(*it)) continue;
      return fmt::format(
          "\n\nThis idea was tried before from kernel {} and failed: {}. The current kernel is "
          "the known-good starting point: keep the idea and avoid that failure.",
          id, *it);
    }
  }
  return "";
}

SortedPlans TaskSearch::on_plans(std::vector<agents::Plan> plans, const VerifiedKernel& parent) {
  planner_failures_ = 0;
  if (parent.kernel_id && parent.parent_id) parent_of_[parent.kernel_id] = *parent.parent_id;
  std::vector<int64_t> ids = lineage(parent.kernel_id);
  SortedPlans sorted;
  std::set<std::string> answer_ideas;
  for (agents::Plan& plan : plans) {
    std::string idea = plan_idea(plan.title);
    // Applied by a verified kernel of this lineage: the idea is where the parent already is.
    bool applied = std::any_of(ids.begin(), ids.end(), [&](int64_t id) {
      return applied_.count(std::to_string(id) + ":" + idea) > 0;
    });
    // From this very parent: under way, verified, or tried and retried already.
    const auto& here = tried_from_[std::to_string(parent.kernel_id) + ":" + idea];
    bool spent = here.size() >= 2 || std::any_of(here.begin(), here.end(), [](const auto& o) {
                   return o == "queued" || is_verified(o);
                 });
    // Two plans of one answer naming the same idea are one plan.
    if (applied || spent || !answer_ideas.insert(idea).second) {
      sorted.dropped.push_back(plan.title);
      continue;
    }
    plan.detail += idea_note(ids, idea);
    sorted.fresh.push_back(std::move(plan));
  }
  for (const auto& idea : answer_ideas) {
    tried_from_[std::to_string(parent.kernel_id) + ":" + idea].push_back("queued");
  }
  if (!sorted.fresh.empty()) {
    planner_stale_ = 0;
    planner_note_.clear();
  }
  return sorted;
}

PhaseChange TaskSearch::on_planner_failed(const std::string& error) {
  if (finished() || ++planner_failures_ < kMaxFailuresInARow) return {};
  phase_ = Phase::kFailed;
  note_ = "the planner keeps failing: " + first_line_clipped(error);
  return {PhaseChange::Kind::kFailed, note_};
}

int TaskSearch::on_planner_stale(const std::string& note) {
  planner_note_ = note;
  return ++planner_stale_;
}

void TaskSearch::queue_plan(const CodeItem& item) {
  // A task far from speed of light gets more than one coder sample of each plan; each later
  // sample is asked to differ and answers a little hotter (CodeItem::sample).
  for (int sample = 0; sample < coder_samples(); ++sample) {
    CodeItem copy = item;
    copy.sample = sample;
    if (sample > 0) {
      copy.plan.detail += fmt::format(
          "\n\nThis is sample {} of this plan: another sample implements it too. Write a "
          "different implementation (another decomposition, tiling or access pattern), not the "
          "most obvious one.",
          sample + 1);
    }
    code_queue_.push_back(std::move(copy));
  }
}

double TaskSearch::coder_temperature_boost(const CodeItem& item) const {
  return temperature_boost_ + item.sample * limits_.stall.temperature_step;
}

Admission TaskSearch::admit(const std::string& source, const std::string& plan_title, int attempt) {
  Admission a;
  a.fingerprint = kernel_fingerprint(source);
  if (finished()) {
    a.refusal = {false, false, "task_done", note_};
    return a;
  }
  // A task parked while this job was under way pays for no repair.
  if (!parked_.empty()) {
    a.refusal = {false, false, "parked", parked_};
    return a;
  }
  if (limits_.candidates_per_task && candidates_ >= *limits_.candidates_per_task) {
    a.refusal = {false, false, "budget", "the task's candidate budget is used"};
    return a;
  }
  if (const KnownKernel* k = known(a.fingerprint)) {
    // Not judged again and not a candidate: counted apart, told to the model, and fed to the
    // stall detector, which decides when repeating has gone on long enough.
    ++repeats_;
    a.repeat = true;
    std::string what = k->kernel_id ? fmt::format("kernel {}", k->kernel_id)
                                    : std::string("a kernel still being evaluated");
    repeat_notes_.push_back(
        fmt::format("your answer to the plan '{}' was the same kernel (up to names, comments and "
                    "spacing) as {}, which was {}",
                    plan_title, what, k->verdict));
    if (repeat_notes_.size() > 6) repeat_notes_.erase(repeat_notes_.begin());
    a.log = fmt::format(
        "coder '{}' attempt {}: is a repeat of {}, which was {}; not evaluated again ({} "
        "repeats on this task)",
        plan_title, attempt, what, k->verdict, repeats_);
    a.refusal = {false, true, "repeat",
                 "this kernel file is the same (up to names, comments and spacing) as " + what +
                     ", which was judged " + k->verdict +
                     "; write the change the plan asks for, as a kernel not written before"};
    return a;
  }
  known_kernels_[a.fingerprint] = {0, "still being evaluated"};
  judged_sources_.insert(sha256_hex(source));
  a.admitted = true;
  return a;
}

PhaseChange TaskSearch::on_judged(const Admission& admission, const std::string& verdict,
                                  const CandidateOutcome& outcome) {
  PhaseChange change = on_result(outcome);
  known_kernels_[admission.fingerprint] = {outcome.kernel_id, verdict};
  return change;
}

void TaskSearch::record_idea_outcome(const CodeItem& item, const std::string& verdict,
                                     const std::optional<VerifiedKernel>& accepted) {
  std::string idea = plan_idea(item.plan.title);
  if (accepted && accepted->kernel_id) {
    applied_.insert(std::to_string(accepted->kernel_id) + ":" + idea);
    parent_of_[accepted->kernel_id] = item.parent.kernel_id;
  }
  if (item.refinement) return;  // the refinement's parent is the plan's child, not its parent
  auto& outcomes = tried_from_[std::to_string(item.parent.kernel_id) + ":" + idea];
  auto queued = std::find(outcomes.begin(), outcomes.end(), "queued");
  if (queued != outcomes.end()) {
    *queued = verdict;
  } else if (is_verified(verdict)) {
    // A later sample verified where an earlier one failed: the plan verified.
    auto failed = std::find_if(outcomes.begin(), outcomes.end(),
                               [](const std::string& o) { return !is_verified(o); });
    if (failed != outcomes.end()) *failed = verdict;
  }
}

PlanFinish TaskSearch::on_plan_finished(const CodeItem& item,
                                        const std::optional<VerifiedKernel>& accepted,
                                        const agents::CoderOutcome& result, double best_before,
                                        bool stopping, agents::WorkContext refine_context) {
  const SearchSettings& s = limits_.search;
  double ratio = accepted ? accepted->speedup / std::max(1e-9, item.parent.speedup) : 0;
  PlanFinish finish;
  finish.verdict =
      accepted
          ? fmt::format("verified, {:.2f}x its parent", ratio)
          : (!result.error.empty()
                 ? "no kernel: " + first_line_clipped(result.error)
                 : (result.failures.empty() ? std::string("not judged") : result.failures.back()));
  tried_plans_.push_back(item.plan.title + " -> " + first_line_clipped(finish.verdict));
  if (!stopping && result.attempts > 0) {
    on_plan_done(best_speedup_ > best_before * s.min_improvement);
  }
  record_idea_outcome(item, first_line_clipped(finish.verdict), accepted);
  // Correct but no real gain over its parent (down to refine_within, a first tensor-core GEMM
  // at 0.7x of a tuned SIMT parent included): one more turn with its own measurements against
  // its parent's, to mature the idea instead of dropping it.
  if (accepted && !item.refinement && ratio >= s.refine_within && ratio < s.positive_pair_speedup &&
      parked_.empty() && !finished() && !stopping) {
    CodeItem refine{
        *accepted,    item.plan, std::move(refine_context), item.retrieved_pairs, item.credited,
        item.plan_id, true};
    refine.context.examples = item.context.examples;
    refine.context.warnings = item.context.warnings;
    refine.plan.detail += fmt::format(
        "\n\nThis plan was implemented as the current kernel above, which is correct but only "
        "{:.2f}x its parent. {} Read its measurements and hardware counters, find what still "
        "limits it, and change that, keeping the plan's idea.",
        ratio, against_parent(item.parent, *accepted));
    code_queue_.push_front(std::move(refine));
    finish.refinement_queued = true;
  }
  return finish;
}

}  // namespace kopt::orchestrator
