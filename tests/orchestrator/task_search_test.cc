// The rules of one task's search (task_search.h), driven directly: no threads, no evaluator, no
// model. Each test changes the state the way a job's result would and checks the rule's answer.
#include "src/orchestrator/task_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "common/files.h"
#include "sandbox/task_spec.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

std::filesystem::path axpy_dir() { return std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy"; }

struct SearchSetup {
  bool llm = true;
  SearchSettings settings;
  double priority = 1;
  std::optional<double> max_usd_per_task;
};

TaskSearch make_search(SearchSetup setup) {
  auto spec = load_task(axpy_dir());
  if (!spec) throw std::runtime_error(spec.error());
  spec->priority = setup.priority;
  auto baseline = read_file(axpy_dir() / "baseline.cu");
  if (!baseline) throw std::runtime_error(baseline.error());
  SearchLimits limits;
  limits.search = setup.settings;
  limits.llm = setup.llm;
  limits.max_usd_per_task = setup.max_usd_per_task;
  return TaskSearch(std::move(*spec), "", *baseline, limits);
}

TaskSearch make_search(bool llm, SearchSettings settings = {}) {
  return make_search(SearchSetup{.llm = llm, .settings = settings});
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
  k.origin = Origin::kCoder;
  outcome.verified = k;
  return outcome;
}

CandidateOutcome failed() {
  CandidateOutcome outcome;
  outcome.judged = true;
  outcome.verdict = Verdict::kIncorrect;
  return outcome;
}

// A search past its baseline (kernel 1, 1.0x, at `sol` % SOL), the baseline's tunables not swept.
TaskSearch searching(SearchSetup setup = {}, double sol = 10) {
  TaskSearch s = make_search(setup);
  auto baseline = verified(1, 1.0, "a baseline that declares no tunables", sol);
  baseline.verified->origin = Origin::kBaseline;
  s.on_baseline(baseline);
  return s;
}

// The search state is written only by its own verbs: the class declares no public data member
// (the compiler then refuses a write from outside task_search*.cc). A declaration with a ';'
// and no '(' in the public part is a field.
TEST(TaskSearch, HasNoPublicFields) {
  auto header =
      read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "src/orchestrator/task_search.h");
  ASSERT_TRUE(header) << header.error();
  size_t begin = header->find("class TaskSearch {");
  ASSERT_NE(begin, std::string::npos);
  size_t end = header->find("\n private:", begin);
  ASSERT_NE(end, std::string::npos);
  std::istringstream lines(header->substr(begin, end - begin));
  std::string line, statement;
  std::vector<std::string> fields;
  int depth = 0;  // inside an inline function body or an enum
  for (std::getline(lines, line); std::getline(lines, line);) {
    std::string code = line.substr(0, line.find("//"));
    if (depth == 0 && code.find_first_not_of(" ") != std::string::npos) statement += code;
    for (char c : code) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth == 0 &&
        (code.find(';') != std::string::npos || code.find('}') != std::string::npos)) {
      bool declaration = statement.find('(') == std::string::npos &&
                         statement.find("enum") == std::string::npos &&
                         statement.find("using") == std::string::npos;
      if (declaration && statement.find(';') != std::string::npos) fields.push_back(statement);
      statement.clear();
    }
  }
  EXPECT_TRUE(fields.empty()) << "public fields: " << ::testing::PrintToString(fields);
}

TEST(TaskSearch, BaselineFirstThenTunerThenPlans) {
  TaskSearch s = make_search(/*llm=*/true);
  PhaseChange change;
  auto now = std::chrono::steady_clock::now();
  ASSERT_EQ(s.next_job(now, true, change), JobKind::kBaseline);
  s.take_job(JobKind::kBaseline);
  EXPECT_EQ(s.phase(), TaskSearch::Phase::kBaselineRunning);
  auto baseline = verified(1, 1.0, s.baseline_source());
  baseline.verified->origin = Origin::kBaseline;
  EXPECT_FALSE(s.on_baseline(baseline));
  s.on_job_ended();
  EXPECT_EQ(s.phase(), TaskSearch::Phase::kSearching);
  ASSERT_TRUE(s.tuning()) << "axpy declares tunables: the tuner sweeps them first";
  // Each tuner job is taken off the queue; claimed while stopping, it frees its slot and asks
  // for no more configurations.
  int tuned = 0;
  while (s.next_job(now, true, change) == JobKind::kTune) {
    TakenJob job = s.take_job(JobKind::kTune);
    ASSERT_TRUE(job.tune.has_value());
    EXPECT_FALSE(s.claim_tune(*job.tune, /*stopping=*/true).has_value());
    s.on_job_ended();
    ++tuned;
  }
  EXPECT_GT(tuned, 1);
  ASSERT_EQ(s.next_job(now, true, change), JobKind::kPlan);
  // A plan running: no second plan, and the task waits (not parked) while the model is held.
  s.take_job(JobKind::kPlan);
  EXPECT_EQ(s.next_job(now, true, change), std::nullopt);
  EXPECT_EQ(s.next_job(now, false, change), std::nullopt);
  EXPECT_FALSE(change);
  s.end_plan();
  s.on_job_ended();
  // A task backed off leaves the model to the others until its time comes.
  s.back_off(now + std::chrono::seconds(5), 0.2);
  EXPECT_DOUBLE_EQ(s.temperature_boost(), 0.2);
  EXPECT_EQ(s.next_job(now, true, change), std::nullopt);
  EXPECT_EQ(s.next_job(now + std::chrono::seconds(6), true, change), JobKind::kPlan);
}

// The planner is told what the tuner found (instead of tuner pairs among its examples): how
// many configurations, how many correct, the default's and the best's speedup, the slowest.
TEST(TaskSearch, TheTunerFactsSayWhatTheSweepFound) {
  TaskSearch s = make_search(/*llm=*/true);
  PhaseChange change;
  auto now = std::chrono::steady_clock::now();
  ASSERT_EQ(s.next_job(now, true, change), JobKind::kBaseline);
  s.take_job(JobKind::kBaseline);
  auto baseline = verified(1, 1.0, s.baseline_source());
  baseline.verified->origin = Origin::kBaseline;
  s.on_baseline(baseline);
  s.on_job_ended();
  EXPECT_TRUE(s.tuner_facts().empty()) << "nothing judged yet";
  std::vector<double> speedups = {1.25, 0, 0.8};  // 0: a wrong configuration
  for (size_t i = 0; i < speedups.size(); ++i) {
    ASSERT_EQ(s.next_job(now, true, change), JobKind::kTune) << i;
    TakenJob job = s.take_job(JobKind::kTune);
    auto source = s.claim_tune(*job.tune, false);
    ASSERT_TRUE(source);
    CandidateOutcome outcome =
        speedups[i] > 0 ? verified(int64_t(10 + i), speedups[i], *source) : failed();
    s.on_tune_judged(*job.tune, *source, speedups[i] > 0 ? "ok" : "incorrect", outcome, false);
    s.on_job_ended();
  }
  auto facts = s.tuner_facts();
  ASSERT_EQ(facts.size(), 1u);
  SCOPED_TRACE(facts[0]);
  EXPECT_NE(facts[0].find("kernel 1: 3 of its 4 configurations (BLOCK) judged"), std::string::npos);
  EXPECT_NE(facts[0].find("(2 correct)"), std::string::npos);
  EXPECT_NE(facts[0].find("runs at 1.00x"), std::string::npos);
  EXPECT_NE(facts[0].find("at 1.25x"), std::string::npos);
  EXPECT_NE(facts[0].find("the slowest correct one at 0.80x"), std::string::npos);
}

TEST(TaskSearch, WithoutAModelATaskIsDoneWhenTheTunerIsDone) {
  TaskSearch s = searching({.llm = false});
  PhaseChange change;
  EXPECT_EQ(s.next_job(std::chrono::steady_clock::now(), false, change), std::nullopt);
  EXPECT_EQ(change.kind, PhaseChange::Kind::kDone);
  EXPECT_EQ(s.note(), "every tunable configuration tried");
}

TEST(TaskSearch, ABaselineThatDoesNotVerifyFailsTheTask) {
  TaskSearch s = make_search(true);
  CandidateOutcome wrong = failed();
  wrong.detail = "out[3]: expected 1, got 2\nmore";
  PhaseChange change = s.on_baseline(wrong);
  EXPECT_EQ(change.kind, PhaseChange::Kind::kFailed);
  EXPECT_EQ(s.note(), "the baseline does not verify: incorrect: out[3]: expected 1, got 2");
  EXPECT_TRUE(s.finished());
}

TEST(TaskSearch, CountsResultsAndEndsOnAPlateau) {
  SearchSettings settings;
  settings.plateau_candidates = 3;
  TaskSearch s = make_search(/*llm=*/true, settings);
  s.on_result(verified(1, 1.0, "a"));
  s.on_result(failed());
  s.on_result(verified(2, 1.005, "b"));  // under the 1% that counts as an improvement
  EXPECT_EQ(s.candidates(), 3);
  EXPECT_EQ(s.failures(), 1);
  EXPECT_EQ(s.since_improvement(), 2);
  EXPECT_DOUBLE_EQ(s.best_speedup(), 1.005);
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  s.on_result(failed());
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_EQ(change.kind, PhaseChange::Kind::kDone);
  EXPECT_NE(s.note().find("plateau: 3 candidates"), std::string::npos) << s.note();
}

TEST(TaskSearch, AnImprovementResetsThePlateauAndEntersTheBeam) {
  TaskSearch s = make_search(/*llm=*/true);
  s.on_result(verified(1, 1.0, "a"));
  s.on_result(failed());
  s.on_result(verified(2, 1.5, "completely different tokens here", 40));
  EXPECT_EQ(s.since_improvement(), 0);
  EXPECT_DOUBLE_EQ(s.best_sol_percent(), 40);
  EXPECT_EQ(s.beam().best()->kernel_id, 2);
}

// A screened kernel (verified at the declared shapes and timed, the rest of the gate never run)
// seeds the beam but never becomes the task's best, even when its median ties the best's.
TEST(TaskSearch, AScreenedKernelSeedsTheBeamButIsNeverTheBest) {
  TaskSearch s = make_search(/*llm=*/true);
  s.on_result(verified(1, 1.0, "a"));
  CandidateOutcome tie = verified(2, 1.004, "completely different tokens here");
  tie.verified->screened = true;
  s.on_result(tie);
  EXPECT_DOUBLE_EQ(s.best_speedup(), 1.0);
  EXPECT_DOUBLE_EQ(s.best_us(), 10);
  EXPECT_EQ(s.failures(), 0) << "a screened kernel is no failure";
  EXPECT_TRUE(s.beam().contains(2));
  CandidateOutcome full = verified(3, 1.004, "yet another body of quite other tokens");
  s.on_result(full);
  EXPECT_DOUBLE_EQ(s.best_speedup(), 1.004) << "the same time with the whole gate does count";
}

// The bar moves with the GPU's drift (best_us_now): the best's median as the latest evaluation's
// baseline puts it, so a kernel at parity with a baseline that now runs faster than in its own
// evaluation is no would-be best by its absolute median.
TEST(TaskSearch, TheBestsTimeNowFollowsTheLatestBaseline) {
  TaskSearch s = make_search(/*llm=*/true);
  EXPECT_DOUBLE_EQ(s.best_us_now(), 0) << "no best yet: nothing to screen by";
  s.on_result(verified(1, 1.0, "a"));
  EXPECT_DOUBLE_EQ(s.best_us_now(), 10) << "no baseline reported yet: the best's own median";
  CandidateOutcome parity = verified(2, 0.999, "completely different tokens here");
  parity.verified->median_us = 8.9;
  parity.verified->baseline_us = 8.9 * 0.999;  // the baseline now runs at 8.89, not 10
  parity.verified->screened = true;
  s.on_result(parity);
  EXPECT_DOUBLE_EQ(s.best_us(), 10);
  EXPECT_NEAR(s.best_us_now(), 8.89, 0.01);
  CandidateOutcome faster = verified(3, 2.0, "yet another body of quite other tokens");
  faster.verified->baseline_us = 9;
  s.on_result(faster);
  EXPECT_DOUBLE_EQ(s.best_us_now(), 4.5) << "the new best at the latest baseline's time";
}

// A resumed run reads a screened row back as a screened kernel: in the beam, no failure, never
// the best, ranked by its honest times (its stored speedup is 0: it is no win).
PastEvaluation past(int64_t id, const std::string& source, Origin origin, Verdict verdict,
                    double median_us, double speedup) {
  PastEvaluation p;
  p.kernel_id = id;
  p.source = source;
  p.origin_agent = origin;
  p.evaluation.verdict = verdict;
  p.evaluation.median_us = median_us;
  p.evaluation.baseline_us = 10;  // the baseline's time, as each row was timed beside it
  p.evaluation.speedup = speedup;
  return p;
}

TEST(TaskSearch, AResumedScreenedKernelIsNeitherAFailureNorTheBest) {
  TaskSearch s = make_search(/*llm=*/true);
  PastEvaluation baseline = past(1, "a baseline", Origin::kBaseline, Verdict::kOk, 10, 1);
  PastEvaluation screened =
      past(2, "completely different tokens here", Origin::kCoder, Verdict::kScreened, 12.5, 0);
  screened.parent_id = 1;
  s.restore({baseline, screened});
  EXPECT_EQ(s.failures(), 0);
  EXPECT_DOUBLE_EQ(s.best_speedup(), 1.0);
  ASSERT_TRUE(s.beam().contains(2));
  for (const VerifiedKernel& k : s.beam().members()) {
    if (k.kernel_id != 2) continue;
    EXPECT_TRUE(k.screened);
    EXPECT_DOUBLE_EQ(k.speedup, 0.8);
  }
}

TEST(TaskSearch, TheEvaluatorFailingInARowFailsTheTask) {
  TaskSearch s = make_search(/*llm=*/true);
  CandidateOutcome error;
  error.error = "worker crashed\nstack";
  for (int i = 1; i < kMaxFailuresInARow; ++i) EXPECT_FALSE(s.on_result(error));
  PhaseChange change = s.on_result(error);
  EXPECT_EQ(change.kind, PhaseChange::Kind::kFailed);
  EXPECT_EQ(s.note(), "the evaluator keeps failing: worker crashed");
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

CandidateOutcome outcome_of(const VerifiedKernel& k) {
  CandidateOutcome outcome;
  outcome.judged = true;
  outcome.kernel_id = k.kernel_id;
  outcome.verified = k;
  return outcome;
}

// The coder's job for `plan` from `parent` ended: verified as `child`, or failed with `failure`.
PlanFinish develop(TaskSearch& s, const VerifiedKernel& parent, const std::string& plan,
                   std::optional<VerifiedKernel> child, const std::string& failure = "") {
  CodeItem item;
  item.parent = parent;
  item.plan = {plan, "..."};
  agents::CoderOutcome result;
  result.attempts = 1;
  if (child) {
    s.on_result(outcome_of(*child));
  } else {
    result.failures.push_back(failure);
  }
  return s.on_plan_finished(item, child, result, s.best_speedup(), false, {});
}

TEST(TaskSearch, PlansAreTheSameByLineageAndTechniqueNotByTitle) {
  TaskSearch s = make_search(/*llm=*/true);
  for (int i = 0; i < 3; ++i) s.on_planner_failed("no answer");
  EXPECT_EQ(s.planner_failures(), 3);
  VerifiedKernel root = beam_kernel(1, 1.0);
  auto first = s.on_plans({{"Vectorize loads", "..."}, {"Unroll", "..."}}, root);
  EXPECT_EQ(first.fresh.size(), 2u);
  EXPECT_EQ(s.planner_failures(), 0);
  // Another title for the same technique from the same kernel while it is under way is a
  // repeat; a plan naming no technique is compared by title.
  auto second =
      s.on_plans({{"float4 loads", "..."}, {"unroll", "..."}, {"Use shared memory", "..."}}, root);
  ASSERT_EQ(second.fresh.size(), 1u);
  EXPECT_EQ(second.fresh[0].title, "Use shared memory");
  EXPECT_EQ(second.dropped, (std::vector<std::string>{"float4 loads", "unroll"}));
  // Once a verified kernel applied the idea, it is blocked on that kernel's whole lineage...
  VerifiedKernel child = beam_kernel(2, 1.3, 1);
  develop(s, root, "Vectorize loads", child);
  VerifiedKernel grandchild = beam_kernel(3, 1.4, 2);
  s.on_result(outcome_of(grandchild));
  EXPECT_TRUE(s.on_plans({{"float4 vector loads", "..."}}, child).fresh.empty());
  EXPECT_TRUE(s.on_plans({{"float4 vector loads", "..."}}, grandchild).fresh.empty());
  // ...but from an unrelated kernel it is a new plan.
  VerifiedKernel other = beam_kernel(4, 1.2);
  EXPECT_EQ(s.on_plans({{"float4 vector loads", "..."}}, other).fresh.size(), 1u);
  // Two plans of one answer with the same idea are one.
  VerifiedKernel fifth = beam_kernel(5, 1.1);
  EXPECT_EQ(s.on_plans({{"warp shuffles", "a"}, {"shfl reduction", "b"}}, fifth).fresh.size(), 1u);
}

TEST(TaskSearch, AnIdeaThatFailedOnTheBaselineIsRetriedOnALaterKernel) {
  TaskSearch s = make_search(/*llm=*/true);
  VerifiedKernel baseline = beam_kernel(1, 1.0);
  ASSERT_EQ(s.on_plans({{"float4 vectorized loads", "..."}}, baseline).fresh.size(), 1u);
  develop(s, baseline, "float4 vectorized loads", std::nullopt,
          "out_of_bounds: float4 past the end when n % 4 != 0");
  // Another idea verified from the baseline: a later kernel of the same lineage.
  ASSERT_EQ(s.on_plans({{"several elements per thread", "..."}}, baseline).fresh.size(), 1u);
  VerifiedKernel later = beam_kernel(2, 1.2, 1);
  develop(s, baseline, "several elements per thread", later);
  // The failed idea is tried again from the later kernel, told why it failed before.
  auto retry = s.on_plans({{"float4 loads", "Load four floats at once."}}, later);
  ASSERT_EQ(retry.fresh.size(), 1u);
  EXPECT_NE(retry.fresh[0].detail.find("tried before from kernel 1 and failed: out_of_bounds: "
                                       "float4 past the end"),
            std::string::npos)
      << retry.fresh[0].detail;
  EXPECT_NE(retry.fresh[0].detail.find("known-good"), std::string::npos);
  // From the baseline itself it gets one retry, then it is spent there.
  auto again = s.on_plans({{"float4 vectorized loads", "..."}}, baseline);
  ASSERT_EQ(again.fresh.size(), 1u);
  develop(s, baseline, "float4 vectorized loads", std::nullopt, "incorrect: again");
  EXPECT_TRUE(s.on_plans({{"float4 vectorized loads", "..."}}, baseline).fresh.empty());
}

TEST(TaskSearch, ASlowerCorrectKernelGetsItsRefinementTurn) {
  TaskSearch s = searching();
  VerifiedKernel parent = beam_kernel(1, 1.0);
  parent.median_us = 10;
  parent.sol_percent = 40;
  // A first tensor-core version at 0.7x of its parent: correct, slower, worth maturing.
  VerifiedKernel slower = beam_kernel(2, 0.7, 1);
  slower.median_us = 14.3;
  slower.sol_percent = 28;
  ASSERT_EQ(s.on_plans({{"tensor cores with wmma", "..."}}, parent).fresh.size(), 1u);
  PlanFinish finish = develop(s, parent, "tensor cores with wmma", slower);
  EXPECT_TRUE(finish.refinement_queued);
  EXPECT_EQ(s.code_queued(), 1);
  TakenJob job = s.take_job(JobKind::kCode);
  ASSERT_TRUE(job.code.has_value());
  EXPECT_TRUE(job.code->refinement);
  EXPECT_EQ(job.code->parent.kernel_id, 2);
  EXPECT_NE(job.code->plan.detail.find("only 0.70x its parent"), std::string::npos);
  EXPECT_NE(job.code->plan.detail.find("Its parent ran 10.00 us (40.0% SOL); it runs 14.30 us"),
            std::string::npos)
      << job.code->plan.detail;
  // Below refine_within (0.6x) the idea is not matured: it is recorded as tried.
  VerifiedKernel much_slower = beam_kernel(3, 0.5, 1);
  ASSERT_EQ(s.on_plans({{"persistent kernel", "..."}}, parent).fresh.size(), 1u);
  EXPECT_FALSE(develop(s, parent, "persistent kernel", much_slower).refinement_queued);
}

TEST(TaskSearch, TheSamplesOfOnePlanDiffer) {
  TaskSearch s = searching({}, /*sol=*/5);  // far from speed of light: two samples per plan
  ASSERT_EQ(s.coder_samples(), 2);
  CodeItem item;
  item.plan = {"float4 loads", "Load four floats."};
  s.queue_plan(item);
  ASSERT_EQ(s.code_queued(), 2);
  TakenJob first = s.take_job(JobKind::kCode);
  TakenJob second = s.take_job(JobKind::kCode);
  EXPECT_EQ(first.code->plan.detail, "Load four floats.");
  EXPECT_NE(second.code->plan.detail.find("Write a different implementation"), std::string::npos);
  EXPECT_GT(s.coder_temperature_boost(*second.code), s.coder_temperature_boost(*first.code));
}

TEST(TaskSearch, ParentChoiceFavoursTheBestAndExploresTheRest) {
  TaskSearch s = make_search(/*llm=*/true);
  s.on_result(outcome_of(beam_kernel(10, 1.9)));
  s.on_result(outcome_of(beam_kernel(11, 1.1)));
  std::map<int64_t, int> chosen;
  for (int i = 0; i < 12; ++i) ++chosen[s.next_parent().kernel_id];
  // The 1.90x kernel gets most plans; the 1.10x one is not starved forever.
  EXPECT_GT(chosen[10], 2 * chosen[11]);
  EXPECT_GE(chosen[11], 1);
  // Round robin would have given each six.
  EXPECT_EQ(chosen[10] + chosen[11], 12);
  // Without exploration only the best is chosen.
  SearchSettings greedy_settings;
  greedy_settings.exploration = 0;
  TaskSearch greedy = make_search(true, greedy_settings);
  greedy.on_result(outcome_of(beam_kernel(10, 1.9)));
  greedy.on_result(outcome_of(beam_kernel(11, 1.1)));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(greedy.next_parent().kernel_id, 10);
}

TEST(TaskSearch, StagnationChangesStrategyBeforeItStopsTheTask) {
  SearchSettings settings;
  settings.plateau_plans = 2;
  // At 50% SOL the headroom is log 2: the plateau is plateau_plans itself.
  TaskSearch s = searching({.settings = settings}, /*sol=*/50);
  ASSERT_EQ(s.plateau_limit(), 2);
  for (int i = 0; i < 50; ++i) s.on_result(failed());  // tuner configurations, failures
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  s.on_plan_done(false);
  s.on_plan_done(true);
  s.on_plan_done(false);
  EXPECT_TRUE(s.update_phase(change));
  s.on_plan_done(false);  // the first plateau: another strategy, not the end
  EXPECT_TRUE(s.update_phase(change));
  EXPECT_EQ(s.strategy_changes(), 1);
  EXPECT_NE(s.planner_note().find("radically different"), std::string::npos);
  s.on_plan_done(false);
  s.on_plan_done(false);
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_NE(s.note().find("plateau: 2 model plans"), std::string::npos) << s.note();
  EXPECT_NE(s.note().find("after a change of strategy"), std::string::npos) << s.note();
}

TEST(TaskSearch, ThePlateauScalesWithHeadroom) {
  SearchSettings settings;
  settings.plateau_plans = 12;
  EXPECT_EQ(searching({.settings = settings}, 50).plateau_limit(), 12);
  EXPECT_EQ(searching({.settings = settings}, 20).plateau_limit(), 28);  // log 5 / log 2
  EXPECT_EQ(searching({.settings = settings}, 2).plateau_limit(), 48);   // capped at 4x
  EXPECT_EQ(searching({.settings = settings}, 80).plateau_limit(), 12);  // never under 1x
}

TEST(TaskSearch, FarFromSpeedOfLightMoreCoderSamples) {
  EXPECT_EQ(searching({}, 5).coder_samples(), 2);
  EXPECT_EQ(searching({}, 60).coder_samples(), 1);
}

TEST(TaskSearch, WeightIsLogOfOneOverSolTimesPriority) {
  TaskSearch gemm = searching({}, 2);
  TaskSearch softmax = searching({}, 45);
  EXPECT_NEAR(gemm.weight(), std::log(50.0), 1e-9);
  EXPECT_GT(gemm.weight() / softmax.weight(), 4.5);
  EXPECT_NEAR(searching({.priority = 2}, 2).weight(), 2 * std::log(50.0), 1e-9);
  // Fairness is in dollars: a task that spent $1 on the model waits for one that spent nothing.
  TaskSearch spent = searching({}, 10);
  TaskSearch fresh = searching({}, 10);
  agents::AgentUsage dollar;
  dollar.cost_usd = 1.0;
  spent.charge(dollar);
  for (int i = 0; i < 100; ++i) {  // a hundred GPU jobs cost less than that
    fresh.take_job(JobKind::kPlan);
    fresh.end_plan();
    fresh.on_job_ended();
  }
  EXPECT_LT(fresh.fair_score(), spent.fair_score());
}

TEST(TaskSearch, ParkingClearsTheCoderQueueOnce) {
  TaskSearch s = make_search(/*llm=*/true);
  s.queue_plan(CodeItem{});
  EXPECT_EQ(s.code_queued(), 1);
  EXPECT_TRUE(s.park("stalled"));
  EXPECT_EQ(s.code_queued(), 0);
  EXPECT_FALSE(s.park("again"));
  EXPECT_EQ(s.parked(), "stalled");
}

TEST(TaskSearch, TheLlmBudgetParksTheTask) {
  TaskSearch s = make_search({.max_usd_per_task = 0.5});
  agents::AgentUsage usage;
  usage.cost_usd = 0.6;
  s.charge(usage);
  PhaseChange change;
  EXPECT_TRUE(s.update_phase(change));
  EXPECT_EQ(change.kind, PhaseChange::Kind::kParked);
  EXPECT_NE(s.parked().find("$0.50"), std::string::npos);
}

TEST(TaskSearch, FairShareFavoursTasksFarFromSpeedOfLight) {
  EXPECT_LT(searching({}, 5).fair_score(), searching({}, 80).fair_score());
}

// A coder answer is judged once: a repeat of a judged kernel is refused and told.
TEST(TaskSearch, AKernelIsAdmittedOnceAndARepeatIsTold) {
  TaskSearch s = searching();
  Admission first = s.admit("__global__ void k() { int a = 1; }", "plan A", 1);
  ASSERT_TRUE(first.admitted);
  s.on_judged(first, "incorrect: out[0]", failed());
  Admission again = s.admit("__global__ void renamed() { int b = 1; } // comment", "plan B", 1);
  EXPECT_FALSE(again.admitted);
  EXPECT_TRUE(again.repeat);
  EXPECT_EQ(again.refusal.kind, "repeat");
  EXPECT_NE(again.refusal.detail.find("incorrect: out[0]"), std::string::npos);
  EXPECT_EQ(s.repeats(), 1);
  ASSERT_EQ(s.repeat_notes().size(), 1u);
  EXPECT_NE(s.repeat_notes()[0].find("plan B"), std::string::npos);
}

// ---- the SOL score S (task_score.h) ----

// A task whose baseline.cu runs 100 us against a 10 us speed-of-light bound, with its best at
// `best_sol` % SOL, and (when `production_us` > 0) cuBLASLt measured on this GPU model.
TaskSearch scored_search(double best_sol, double production_us, SearchSettings settings = {},
                         double priority = 1, double sol_us = 10) {
  TaskSearch s = make_search({.settings = settings, .priority = priority});
  CandidateOutcome baseline = verified(1, 1.0, "baseline");
  baseline.verified->median_us = 100;
  baseline.verified->sol_us = sol_us;
  baseline.verified->sol_percent = std::min(10.0, best_sol);
  s.on_baseline(baseline);
  if (best_sol > 10) s.on_result(verified(2, 1.0, "best", best_sol));
  if (production_us > 0) s.set_production(ProductionReference{"cublaslt_autotuned", production_us});
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
  EXPECT_NEAR(scored_search(20, 30, {}, /*priority=*/2).weight(), 2 * std::log(3.0), 1e-9);

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
  s.on_result(verified(3, 1.0, "faster", 82));
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_EQ(s.phase(), TaskSearch::Phase::kDone);
  EXPECT_NE(s.note().find("S 0.90 against cublaslt_autotuned"), std::string::npos) << s.note();
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
  s.on_result(verified(3, 1.0, "faster", 96));
  EXPECT_FALSE(s.update_phase(change));
  EXPECT_NE(s.note().find("as fast as cublaslt_autotuned or faster"), std::string::npos)
      << s.note();
}

TEST(TaskScore, WithoutSTheTaskFallsBackToPercentOfSolAndSaysSoOnce) {
  PhaseChange change;
  // No bound (the task declares neither flops nor bytes): %SOL rules, said once.
  TaskSearch unbounded = scored_search(0, 30, {}, 1, /*sol_us=*/0);
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
  EXPECT_NE(faster.note().find("120.0% of speed of light"), std::string::npos) << faster.note();

  // Nothing timed yet: nothing to say.
  TaskSearch fresh = make_search(true);
  fresh.set_production(ProductionReference{"torch_eager", 30});
  EXPECT_FALSE(fresh.score().uses_s);
  EXPECT_FALSE(fresh.take_score_note().has_value());
}

}  // namespace
}  // namespace kopt::orchestrator
