// Rebuilding a task's search state from the memory: a resumed run from its own evaluations, and
// a new night from what earlier nights judged under the same task spec and verifier, so that it
// pays for nothing twice (task_search.h).
#include <fmt/format.h>

#include <algorithm>

#include "common/json_limits.h"
#include "common/json_reader.h"
#include "common/sha256.h"
#include "sandbox/compiler.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/kernel_fingerprint.h"
#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

namespace {

// A stored kernel's speedup over its baseline: a screened row stores none (it is no win), so its
// ratio to the baseline it was timed with.
double history_speedup(const memory::EvaluationRecord& e) {
  if (e.verdict == Verdict::kScreened && e.median_us > 0 && e.baseline_us > 0)
    return e.baseline_us / e.median_us;
  return e.speedup > 0 ? e.speedup : 1.0;
}

VerifiedKernel verified_from_history(const PastEvaluation& p) {
  VerifiedKernel k;
  k.kernel_id = p.kernel_id;
  k.parent_id = p.parent_id;
  k.source = p.source;
  k.origin = p.tuner ? Origin::kTuner : p.origin_agent;
  const memory::EvaluationRecord& e = p.evaluation;
  k.median_us = e.median_us;
  k.noise = e.noise;
  k.baseline_us = e.baseline_us;
  k.speedup = history_speedup(e);
  k.screened = e.verdict == Verdict::kScreened;
  k.sol_percent = e.sol_percent;
  k.sol_us = e.sol_percent / 100.0 * e.median_us;
  auto r = parse_json_bounded(e.resources_json);
  if (r.is_object() && r.contains("registers")) {
    // The stored object also names the verified image (image_sha256): other keys are allowed.
    JsonReader reader("resources_json");
    KernelResources res = resources_from_json(reader, r, "$");
    if (reader.ok()) k.resources = res;
  }
  return k;
}

TunableConfig config_from_json(const std::string& text) {
  TunableConfig config;
  auto j = parse_json_bounded(text);
  if (!j.is_object()) return config;
  for (const auto& [name, value] : j.items()) {
    if (value.is_number_integer()) config[name] = value.get<int64_t>();
  }
  return config;
}

bool is_ok(const PastEvaluation& p) { return p.evaluation.verdict == Verdict::kOk; }
// Timed honestly, the rest of the gate not run (sandbox/worker/evaluation.cc, finish_gate).
bool is_screened(const PastEvaluation& p) {
  return p.evaluation.verdict == Verdict::kScreened && p.evaluation.median_us > 0;
}

std::string stored_verdict(const PastEvaluation& p) {
  const memory::EvaluationRecord& e = p.evaluation;
  if (e.verdict == Verdict::kOk) return fmt::format("ok {:.2f}x", e.speedup);
  std::string detail = e.detail.substr(0, e.detail.find('\n'));
  if (detail.size() > 160) detail = detail.substr(0, 160) + "...";
  std::string verdict = verdict_name(e.verdict);
  return detail.empty() ? verdict : verdict + ": " + detail;
}

// What a judged configuration ranks by in its sweep: a screened one by its honest times too.
double tune_speedup(const PastEvaluation& p) {
  return is_ok(p) || is_screened(p) ? history_speedup(p.evaluation) : 0.0;
}

GpuIdentity gpu_of(const PastEvaluation& p) {
  GpuIdentity gpu;
  gpu.model = p.evaluation.gpu.model;
  gpu.cc = p.evaluation.gpu.compute_capability;
  gpu.driver = p.evaluation.gpu.driver_version;
  gpu.arch = arch_of_compute_capability(gpu.cc);
  return gpu;
}

}  // namespace

std::optional<GpuIdentity> TaskSearch::restore(const std::vector<PastEvaluation>& history) {
  std::optional<GpuIdentity> gpu;
  for (const PastEvaluation& p : history) {
    remember(p.source, p.kernel_id, stored_verdict(p));
    // Configurations judged before the resume count as tried; the best of them steers the
    // sweep of their kernel once it is a tune target again (below).
    if (p.tuner && p.parent_id) {
      earlier_tunes_[*p.parent_id].emplace_back(config_from_json(p.evaluation.tunables_json),
                                                tune_speedup(p));
    }
    if (p.origin_agent == Origin::kBaseline && !p.parent_id) {
      if (!is_ok(p)) continue;
      VerifiedKernel k = verified_from_history(p);
      baseline_ = k;
      beam_.offer(k);
      best_speedup_ = std::max(best_speedup_, 1.0);
      best_us_ = best_us_ > 0 ? best_us_ : k.median_us;
      best_sol_percent_ = std::max(best_sol_percent_, k.sol_percent);
      phase_ = Phase::kSearching;
      if (!gpu) gpu = gpu_of(p);
      continue;
    }
    CandidateOutcome outcome;
    outcome.judged = true;
    if (is_ok(p) || is_screened(p)) outcome.verified = verified_from_history(p);
    // Tune targets are rebuilt below from the restored beam, not while counting.
    on_result(outcome, /*tune_new_kernels=*/false);
  }
  if (phase_ != Phase::kSearching) return gpu;
  for (const VerifiedKernel& k : std::vector<VerifiedKernel>(beam_.members())) {
    if (k.origin != Origin::kTuner) add_tune_target(k);
  }
  if (baseline_ && !beam_.contains(baseline_->kernel_id)) add_tune_target(*baseline_);
  return gpu;
}

void TaskSearch::carry_over(const EarlierNights& earlier) {
  std::set<int64_t> verified;
  for (const PastEvaluation& p : earlier.evaluations) {
    // Judged under this spec and verifier: not judged again, and a coder repeating it is told
    // what it scored. The latest verdict of a kernel is the one kept.
    earlier_sources_.insert(sha256_hex(p.source));
    known_kernels_[kernel_fingerprint(p.source)] = {p.kernel_id,
                                                    stored_verdict(p) + " (an earlier night)"};
    if (p.tuner && p.parent_id) {
      earlier_tunes_[*p.parent_id].emplace_back(config_from_json(p.evaluation.tunables_json),
                                                tune_speedup(p));
    }
    if (is_ok(p)) {
      verified.insert(p.kernel_id);
      if (p.parent_id) parent_of_[p.kernel_id] = *p.parent_id;
    }
  }
  std::vector<std::string> failed;
  for (const memory::PlanRecord& plan : earlier.plans) {
    if (auto outcome = carry_plan(plan, verified)) failed.push_back(*outcome);
  }
  // What failed on this task in earlier nights, and why, newest 12: the planner is told from
  // the start.
  size_t first = failed.size() > 12 ? failed.size() - 12 : 0;
  tried_plans_.insert(tried_plans_.begin(), failed.begin() + static_cast<ptrdiff_t>(first),
                      failed.end());
}

std::optional<std::string> TaskSearch::carry_plan(const memory::PlanRecord& plan,
                                                  const std::set<int64_t>& verified) {
  std::vector<int64_t> verified_children;
  for (int64_t child : plan.child_kernel_ids) {
    if (verified.count(child)) verified_children.push_back(child);
  }
  // Every attempt counts, not the last one written: a plan with any verified kernel verified.
  bool ok = !verified_children.empty();
  if (!ok && (plan.outcome == "queued" || !plan.parent_kernel_id)) return std::nullopt;
  std::string idea = plan_idea(plan.title);
  std::string outcome = ok && plan.outcome.rfind("verified", 0) != 0
                            ? std::string("verified (an earlier night)")
                            : plan.outcome;
  if (plan.parent_kernel_id) {
    tried_from_[std::to_string(*plan.parent_kernel_id) + ":" + idea].push_back(outcome);
  }
  for (int64_t child : verified_children) {
    applied_.insert(std::to_string(child) + ":" + idea);
    if (plan.parent_kernel_id) parent_of_[child] = *plan.parent_kernel_id;
  }
  if (ok) return std::nullopt;
  return plan.title + " -> " + outcome + " (an earlier run)";
}

bool TaskSearch::keep_earlier_outcome(const std::string& state, const std::string& note,
                                      const agents::AgentUsage& used, bool run_ended) {
  usage_.add(used);
  if (finished()) return false;
  if (state == "done" || state == "failed") {
    phase_ = state == "done" ? Phase::kDone : Phase::kFailed;
    note_ = note;
    return true;
  }
  if (state != "parked") return false;
  park(note);
  if (run_ended) {
    phase_ = Phase::kParked;
    note_ = note;
  }
  return true;
}

}  // namespace kopt::orchestrator
