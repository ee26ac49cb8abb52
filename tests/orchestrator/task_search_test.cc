// The rules of one task's search (task_search.h), driven directly: no threads, no evaluator, no
// model. Each test changes the state the way a job's result would and checks the rule's answer.
#include "src/orchestrator/task_search.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/files.h"
#include "sandbox/task_spec.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

std::filesystem::path axpy_dir() { return std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy"; }

TaskSearch make_search(bool llm, SearchSettings settings = {}) {
  auto spec = load_task(axpy_dir());
  if (!spec) throw std::runtime_error(spec.error());
  auto baseline = read_file(axpy_dir() / "baseline.cu");
  if (!baseline) throw std::runtime_error(baseline.error());
  SearchLimits limits;
  limits.search = settings;
  limits.llm = llm;
  return TaskSearch(std::move(*spec), "", *baseline, limits);
}

CandidateOutcome verified(int64_t id, double speedup, const std::string& source, double sol = 10) {
  CandidateOutcome outcome;
  outcome.judged = true;
  outcome.kernel_id = id;
  VerifiedKernel k;
  k.kernel_id = id;
  k.speedup = speedup;
  k.median_us = 10 / speedup;
  k.sol_percent = sol;
  k.source = source;
  k.origin = "coder";
  outcome.verified = k;
  return outcome;
}

CandidateOutcome failed() {
  CandidateOutcome outcome;
  outcome.judged = true;
  outcome.verdict = Verdict::kIncorrect;
  return outcome;
}

TEST(TaskSearch, BaselineFirstThenTunerThenPlans) {
  TaskSearch s = make_search(/*llm=*/true);
  PhaseChange change;
  auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(s.next_job(now, true, change), JobKind::kBaseline);
  s.phase = TaskSearch::Phase::kSearching;
  auto baseline = verified(1, 1.0, s.baseline_source);
  baseline.verified->origin = "baseline";
  s.on_result(baseline);
  ASSERT_FALSE(s.tune_queue.empty()) << "axpy declares tunables: the tuner sweeps them first";
  EXPECT_EQ(s.next_job(now, true, change), JobKind::kTune);
  s.tune_queue.clear();
  EXPECT_EQ(s.next_job(now, true, change), JobKind::kPlan);
  // The model held back: no plan, and the task waits (not parked) while a job runs.
  s.in_flight = 1;
  EXPECT_EQ(s.next_job(now, false, change), std::nullopt);
  EXPECT_FALSE(change);
  // A task backed off leaves the model to the others until its time comes.
  s.in_flight = 0;
  s.llm_not_before = now + std::chrono::seconds(5);
  EXPECT_EQ(s.next_job(now, true, change), std::nullopt);
  EXPECT_EQ(s.next_job(now + std::chrono::seconds(6), true, change), JobKind::kPlan);
}

TEST(TaskSearch, WithoutAModelATaskIsDoneWhenTheTunerIsDone) {
  TaskSearch s = make_search(/*llm=*/false);
  s.phase = TaskSearch::Phase::kSearching;
  s.on_result(verified(1, 1.0, "x"));
  PhaseChange change;
  EXPECT_EQ(s.next_job(std::chrono::steady_clock::now(), false, change), std::nullopt);
  EXPECT_EQ(change.kind, PhaseChange::Kind::kDone);
  EXPECT_EQ(s.note, "every tunable configuration tried");
}

TEST(TaskSearch, CountsResultsAndEndsOnAPlateau) {
  SearchSettings settings;
  settings.plateau_candidates = 3;
  TaskSearch s = make_search(/*llm=*/true, settings);
  s.phase = TaskSearch::Phase::kSearching;
  s.on_result(verified(1, 1.0, "a"));
  s.on_result(failed());
  s.on_result(verified(2, 1.005, "b"));  // under the 1% that counts as an improvement
  EXPECT_EQ(s.candidates, 3);
  EXPECT_EQ(s.failures, 1);
  EXPECT_EQ(s.since_improvement, 2);
  EXPECT_DOUBLE_EQ(s.best_speedup, 1.005);
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  s.on_result(failed());
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_EQ(change.kind, PhaseChange::Kind::kDone);
  EXPECT_NE(s.note.find("plateau: 3 candidates"), std::string::npos) << s.note;
}

TEST(TaskSearch, AnImprovementResetsThePlateauAndEntersTheBeam) {
  TaskSearch s = make_search(/*llm=*/true);
  s.on_result(verified(1, 1.0, "a"));
  s.on_result(failed());
  s.on_result(verified(2, 1.5, "completely different tokens here", 40));
  EXPECT_EQ(s.since_improvement, 0);
  EXPECT_DOUBLE_EQ(s.best_sol_percent, 40);
  EXPECT_EQ(s.beam.best()->kernel_id, 2);
}

TEST(TaskSearch, TheEvaluatorFailingInARowFailsTheTask) {
  TaskSearch s = make_search(/*llm=*/true);
  CandidateOutcome error;
  error.error = "worker crashed\nstack";
  for (int i = 1; i < kMaxFailuresInARow; ++i) EXPECT_FALSE(s.on_result(error));
  PhaseChange change = s.on_result(error);
  EXPECT_EQ(change.kind, PhaseChange::Kind::kFailed);
  EXPECT_EQ(s.note, "the evaluator keeps failing: worker crashed");
  // A busy GPU is not the task's failure.
  TaskSearch t = make_search(true);
  error.gpu_busy = true;
  for (int i = 0; i < 2 * kMaxFailuresInARow; ++i) EXPECT_FALSE(t.on_result(error));
}

VerifiedKernel beam_kernel(int64_t id, double speedup, std::optional<int64_t> parent = {}) {
  VerifiedKernel k;
  k.kernel_id = id;
  k.parent_id = parent;
  k.speedup = speedup;
  k.source = "kernel " + std::to_string(id) + std::string(static_cast<size_t>(id), 'x');
  return k;
}

TEST(TaskSearch, PlansAreTheSameByLineageAndTechniqueNotByTitle) {
  TaskSearch s = make_search(/*llm=*/true);
  s.planner_failures = 3;
  VerifiedKernel root = beam_kernel(1, 1.0);
  auto first = s.on_plans({{"Vectorize loads", "..."}, {"Unroll", "..."}}, root);
  EXPECT_EQ(first.fresh.size(), 2u);
  EXPECT_EQ(s.planner_failures, 0);
  // Another title for the same technique from the same kernel is a repeat; a plan naming no
  // technique is compared by title.
  auto second =
      s.on_plans({{"float4 loads", "..."}, {"unroll", "..."}, {"Use shared memory", "..."}}, root);
  ASSERT_EQ(second.fresh.size(), 1u);
  EXPECT_EQ(second.fresh[0].title, "Use shared memory");
  EXPECT_EQ(second.dropped, (std::vector<std::string>{"float4 loads", "unroll"}));
  // From a child of that kernel the same idea was already applied up its lineage...
  VerifiedKernel child = beam_kernel(2, 1.3, 1);
  EXPECT_TRUE(s.on_plans({{"float4 vector loads", "..."}}, child).fresh.empty());
  // ...but from an unrelated kernel it is a new plan.
  VerifiedKernel other = beam_kernel(3, 1.2);
  EXPECT_EQ(s.on_plans({{"float4 vector loads", "..."}}, other).fresh.size(), 1u);
  // Two plans of one answer with the same idea are one.
  VerifiedKernel fourth = beam_kernel(4, 1.1);
  EXPECT_EQ(s.on_plans({{"warp shuffles", "a"}, {"shfl reduction", "b"}}, fourth).fresh.size(), 1u);
}

TEST(TaskSearch, ParentChoiceFavoursTheBestAndExploresTheRest) {
  TaskSearch s = make_search(/*llm=*/true);
  s.beam.offer(beam_kernel(10, 1.9));
  s.beam.offer(beam_kernel(11, 1.1));
  s.best_speedup = 1.9;
  std::map<int64_t, int> chosen;
  for (int i = 0; i < 12; ++i) ++chosen[s.next_parent().kernel_id];
  // The 1.90x kernel gets most plans; the 1.10x one is not starved forever.
  EXPECT_GT(chosen[10], 2 * chosen[11]);
  EXPECT_GE(chosen[11], 1);
  // Round robin would have given each six.
  EXPECT_EQ(chosen[10] + chosen[11], 12);
  // Without exploration only the best is chosen.
  TaskSearch greedy = make_search(true);
  greedy.limits.search.exploration = 0;
  greedy.beam.offer(beam_kernel(10, 1.9));
  greedy.beam.offer(beam_kernel(11, 1.1));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(greedy.next_parent().kernel_id, 10);
}

TEST(TaskSearch, ThePlateauCountsModelPlansNotTunerConfigurations) {
  SearchSettings settings;
  settings.plateau_plans = 2;
  TaskSearch s = make_search(/*llm=*/true, settings);
  s.phase = TaskSearch::Phase::kSearching;
  for (int i = 0; i < 50; ++i) s.on_result(failed());  // tuner configurations, failures
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  s.on_plan_done(false);
  s.on_plan_done(true);
  s.on_plan_done(false);
  EXPECT_TRUE(s.update_phase(change));
  s.on_plan_done(false);
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_NE(s.note.find("plateau: 2 model plans"), std::string::npos) << s.note;
}

TEST(TaskSearch, FarFromSpeedOfLightMoreCoderSamples) {
  TaskSearch s = make_search(true);
  s.best_sol_percent = 5;
  EXPECT_EQ(s.coder_samples(), 2);
  s.best_sol_percent = 60;
  EXPECT_EQ(s.coder_samples(), 1);
}

TEST(TaskSearch, WeightIsLogOfOneOverSolTimesPriority) {
  TaskSearch gemm = make_search(true);
  TaskSearch softmax = make_search(true);
  gemm.best_sol_percent = 2;
  softmax.best_sol_percent = 45;
  EXPECT_NEAR(gemm.weight(), std::log(50.0), 1e-9);
  EXPECT_GT(gemm.weight() / softmax.weight(), 4.5);
  gemm.spec.priority = 2;
  EXPECT_NEAR(gemm.weight(), 2 * std::log(50.0), 1e-9);
  // Fairness is in dollars: a task that spent $1 on the model waits for one that spent nothing.
  TaskSearch spent = make_search(true);
  TaskSearch fresh = make_search(true);
  spent.best_sol_percent = fresh.best_sol_percent = 10;
  spent.usage.cost_usd = 1.0;
  fresh.jobs_started = 100;  // a hundred tuner configurations cost less than that
  EXPECT_LT(fresh.fair_score(), spent.fair_score());
}

TEST(TaskSearch, ParkingClearsTheCoderQueueOnce) {
  TaskSearch s = make_search(/*llm=*/true);
  s.code_queue.push_back(CodeItem{});
  EXPECT_TRUE(s.park("stalled"));
  EXPECT_TRUE(s.code_queue.empty());
  EXPECT_FALSE(s.park("again"));
  EXPECT_EQ(s.parked, "stalled");
}

TEST(TaskSearch, TheLlmBudgetParksTheTask) {
  TaskSearch s = make_search(/*llm=*/true);
  s.limits.max_usd_per_task = 0.5;
  s.usage.cost_usd = 0.6;
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  EXPECT_EQ(change.kind, PhaseChange::Kind::kParked);
  EXPECT_NE(s.parked.find("$0.50"), std::string::npos);
}

TEST(TaskSearch, FairShareFavoursTasksFarFromSpeedOfLight) {
  TaskSearch far = make_search(true);
  TaskSearch near = make_search(true);
  far.best_sol_percent = 5;
  near.best_sol_percent = 80;
  EXPECT_LT(far.fair_score(), near.fair_score());
}

// ---- the SOL score S (task_score.h) ----

// A task whose baseline.cu runs 100 us against a 10 us speed-of-light bound, with its best at
// `best_sol` % SOL, and (when `production_us` > 0) cuBLASLt measured on this GPU model.
TaskSearch scored_search(double best_sol, double production_us, SearchSettings settings = {}) {
  TaskSearch s = make_search(/*llm=*/true, settings);
  VerifiedKernel baseline;
  baseline.median_us = 100;
  baseline.sol_us = 10;
  baseline.sol_percent = 10;
  s.baseline = baseline;
  s.phase = TaskSearch::Phase::kSearching;
  s.best_sol_percent = best_sol;
  if (production_us > 0) s.production = ProductionReference{"cublaslt_autotuned", production_us};
  return s;
}

TEST(TaskScore, WeightIsLogOfOneOverSAgainstTheProductionBaseline) {
  // The best kernel at 20% SOL runs 50 us; cuBLASLt 30 us: S = 1 / (1 + 40 / 20) = 1/3.
  TaskSearch s = scored_search(20, 30);
  TaskScore score = s.score();
  ASSERT_TRUE(score.uses_s) << score.fallback;
  EXPECT_NEAR(score.s, 1.0 / 3, 1e-9);
  EXPECT_EQ(score.reference, "cublaslt_autotuned");
  EXPECT_NEAR(s.weight(), std::log(3.0), 1e-9);
  s.spec.priority = 2;
  EXPECT_NEAR(s.weight(), 2 * std::log(3.0), 1e-9);

  // The same task judged by %SOL, asked for or (auto) for want of a production baseline.
  SearchSettings by_sol;
  by_sol.score = ScoreBasis::kSolPercent;
  EXPECT_NEAR(scored_search(20, 30, by_sol).weight(), std::log(5.0), 1e-9);
  TaskSearch unmeasured = scored_search(20, 0);
  EXPECT_FALSE(unmeasured.score().uses_s);
  EXPECT_EQ(unmeasured.score().fallback, "") << "auto without a production baseline is the rule";
  EXPECT_NEAR(unmeasured.weight(), std::log(5.0), 1e-9);
  EXPECT_FALSE(unmeasured.take_score_note().has_value());

  // sol_score without a production baseline: baseline.cu is the reference, as standing() does.
  SearchSettings by_s;
  by_s.score = ScoreBasis::kSolScore;
  TaskSearch against_baseline = scored_search(20, 0, by_s);
  ASSERT_TRUE(against_baseline.score().uses_s);
  EXPECT_EQ(against_baseline.score().reference, "baseline.cu");
  EXPECT_NEAR(against_baseline.score().s, 1 / (1 + 40.0 / 90), 1e-9);
}

TEST(TaskScore, TheNightGoesToTheTaskFurthestBehindProduction) {
  // Both at 20% SOL: behind a strong cuBLASLt (12 us, S 0.05) the task weighs far more than
  // next to a weak reference (500 us, S 0.92), which %SOL alone could not tell apart.
  TaskSearch behind = scored_search(20, 12);
  TaskSearch ahead = scored_search(20, 500);
  EXPECT_GT(behind.weight(), 10 * ahead.weight());
  EXPECT_LT(behind.fair_score(), ahead.fair_score());
}

TEST(TaskScore, DoneAtTheSThresholdNotAtThePercentOfSol) {
  PhaseChange change;
  // 80% SOL (12.5 us) against 30 us: S 0.889 < 0.9; 82% SOL (12.2 us): S 0.901.
  TaskSearch s = scored_search(80, 30);
  EXPECT_TRUE(s.update_phase(change));
  EXPECT_FALSE(change);
  s.best_sol_percent = 82;
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_EQ(s.phase, TaskSearch::Phase::kDone);
  EXPECT_NE(s.note.find("S 0.90 against cublaslt_autotuned"), std::string::npos) << s.note;
  // %SOL alone would go on to 90%.
  SearchSettings by_sol;
  by_sol.score = ScoreBasis::kSolPercent;
  TaskSearch percent = scored_search(82, 30, by_sol);
  EXPECT_TRUE(percent.update_phase(change));
  // A lower threshold: 0.5 is parity with cuBLASLt (30 us = 33% SOL).
  SearchSettings parity;
  parity.sol_score_threshold = 0.5;
  EXPECT_TRUE(scored_search(32, 30, parity).update_phase(change));
  EXPECT_FALSE(scored_search(34, 30, parity).update_phase(change));
}

TEST(TaskScore, NearTheBoundATaskSlowerThanProductionGoesOn) {
  PhaseChange change;
  // cuBLASLt at 10.5 us (95% SOL). At 91% SOL (10.99 us) the kernel is slower (S 0.34): %SOL
  // would stop it, S does not. At 96% SOL (10.42 us) it is faster (S 0.55): done.
  TaskSearch s = scored_search(91, 10.5);
  EXPECT_TRUE(s.update_phase(change));
  s.best_sol_percent = 96;
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_NE(s.note.find("as fast as cublaslt_autotuned or faster"), std::string::npos) << s.note;
}

TEST(TaskScore, WithoutSTheTaskFallsBackToPercentOfSolAndSaysSoOnce) {
  PhaseChange change;
  // No bound (the task declares neither flops nor bytes): %SOL rules, said once.
  TaskSearch unbounded = scored_search(0, 30);
  unbounded.baseline->sol_us = 0;
  EXPECT_FALSE(unbounded.score().uses_s);
  EXPECT_EQ(unbounded.score().fallback, "no speed-of-light bound");
  auto note = unbounded.take_score_note();
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("S cannot be computed (no speed-of-light bound)"), std::string::npos);
  EXPECT_NE(note->find("%SOL"), std::string::npos);
  EXPECT_FALSE(unbounded.take_score_note().has_value()) << "said once, not at every job";
  EXPECT_NEAR(unbounded.weight(), std::log(100.0), 1e-9);

  // A kernel faster than the bound: suspicious, S refuses; %SOL decides (and here stops it).
  TaskSearch faster = scored_search(120, 30);
  EXPECT_FALSE(faster.score().uses_s);
  EXPECT_NE(faster.score().fallback.find("suspicious"), std::string::npos);
  EXPECT_FALSE(faster.update_phase(change));
  EXPECT_NE(faster.note.find("120.0% of speed of light"), std::string::npos) << faster.note;

  // Nothing timed yet: nothing to say.
  TaskSearch fresh = make_search(true);
  fresh.production = ProductionReference{"torch_eager", 30};
  EXPECT_FALSE(fresh.score().uses_s);
  EXPECT_FALSE(fresh.take_score_note().has_value());
}

}  // namespace
}  // namespace kopt::orchestrator
