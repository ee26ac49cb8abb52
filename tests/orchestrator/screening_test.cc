// Screening (issue 35), on the CPU: CandidateEvaluator with real NVRTC and a real SQLite memory,
// the fake evaluator standing in for the GPU as the worker's finish_gate() behaves (a kernel not
// below EvalOptions::full_gate_below_us ends `screened`; below it the rest of the gate runs).
#include <gtest/gtest.h>

#include "common/files.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/orchestrator.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/fake_evaluator.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::FakeEvaluator;
using kopt::testing::TempDir;

class ScreeningTest : public ::testing::Test {
 protected:
  ScreeningTest() {
    kopt::testing::isolate_environment(dir_.path());
    auto store = memory::MemoryStore::open(db_path());
    if (!store) throw std::runtime_error(store.error());
    store_.emplace(std::move(*store));
    recorder_.emplace(*store_);
    task_dir_ = kopt::testing::copy_task("axpy", dir_ / "tasks");
    auto spec = load_task(task_dir_);
    if (!spec) throw std::runtime_error(spec.error());
    spec_ = std::move(*spec);
    if (!recorder_->start_run("{}") || !recorder_->upsert_task(spec_))
      throw std::runtime_error("cannot start a run");
  }

  std::filesystem::path db_path() const { return dir_ / "memory.db"; }
  int64_t count(const std::string& sql) { return kopt::testing::query_count(db_path(), sql); }

  // A coder's kernel at `time_us` (the axpy baseline with a script line), the best at 110 us.
  CandidateInput input_at(double time_us, const std::string& script = "", bool screen = true) {
    CandidateInput input;
    input.task = &spec_;
    input.reference_source = *read_file(task_dir_ / "reference.cu");
    input.baseline_source = *read_file(task_dir_ / "baseline.cu");
    input.gpu = GpuIdentity{};
    input.gpu->model = "Fake H100 80GB HBM3";
    input.source = input.baseline_source + "// test-evaluator: time_us=" + std::to_string(time_us) +
                   "\n" + script;
    input.origin = {Origin::kCoder, "m", "coder.txt", false};
    input.best_us = 100 * 1.1;  // the default BLOCK=256 costs the fake GPU 1.1x its time
    input.best_noise = 0.002;
    input.screen = screen;
    return input;
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  std::optional<RunRecorder> recorder_;
  std::filesystem::path task_dir_;
  TaskSpec spec_;
};

// Slower than the best: its honest times, verdict `screened` in the memory (never 'ok', so never
// a win nor exported), a VerifiedKernel marked screened for the search. Without the screen the
// same kernel is 'ok'.
TEST_F(ScreeningTest, ASlowerKernelIsStoredScreenedWithItsTimes) {
  FakeEvaluator evaluator;
  CandidateEvaluator candidates(evaluator, *recorder_, nullptr);
  CandidateOutcome slower = candidates.judge(input_at(150));
  EXPECT_EQ(slower.verdict, Verdict::kScreened);
  ASSERT_TRUE(slower.verified);
  EXPECT_TRUE(slower.verified->screened);
  EXPECT_NEAR(slower.verified->median_us, 150 * 1.1, 1e-6);
  EXPECT_FALSE(slower.provisional);
  EXPECT_EQ(evaluator.screened(), 1);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'screened' AND median_us > 0 "
                  "AND speedup = 0 AND kernel_id = " +
                  std::to_string(slower.kernel_id)),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok'"), 0);

  CandidateOutcome unscreened = candidates.judge(input_at(151, "", /*screen=*/false));
  EXPECT_EQ(unscreened.verdict, Verdict::kOk);
  ASSERT_TRUE(unscreened.verified);
  EXPECT_FALSE(unscreened.verified->screened);
  EXPECT_EQ(evaluator.screened(), 1);
}

// Every kernel that may become the best gets the whole gate: a fast kernel that fails only there
// is rejected, screen or not; a tie within the noise is screened (it cannot displace the best).
TEST_F(ScreeningTest, EveryWouldBeBestGetsTheWholeGate) {
  FakeEvaluator evaluator;
  CandidateEvaluator candidates(evaluator, *recorder_, nullptr);
  const std::string wrong = "// test-evaluator: gate_verdict=incorrect\n";
  CandidateOutcome fast = candidates.judge(input_at(80, wrong));
  EXPECT_EQ(fast.verdict, Verdict::kIncorrect);
  EXPECT_FALSE(fast.verified);
  EXPECT_EQ(evaluator.screened(), 0);
  CandidateOutcome tie = candidates.judge(input_at(99.8));  // 1.002x the best: noise
  EXPECT_EQ(tie.verdict, Verdict::kScreened);
  // The price, said plainly: a slower kernel wrong only in the rest of the gate is screened, not
  // rejected (never a win, never exported; `kopt export` judges again with the whole gate).
  CandidateOutcome slow_wrong = candidates.judge(input_at(150, wrong));
  EXPECT_EQ(slow_wrong.verdict, Verdict::kScreened);
  CandidateOutcome unscreened = candidates.judge(input_at(150, wrong, /*screen=*/false));
  EXPECT_EQ(unscreened.verdict, Verdict::kIncorrect);
}

// Screening timing first (daemon.search.screen_time_first): the request says so only with the
// screen; a slow kernel wrong at a declared shape is then screened, not incorrect (the price of
// the setting, on by default), and a fast one wrong there is still rejected.
TEST_F(ScreeningTest, TimingFirstLeavesTheDeclaredShapesToWouldBeBests) {
  FakeEvaluator evaluator;
  CandidateEvaluator candidates(evaluator, *recorder_, nullptr);
  const std::string wrong = "// test-evaluator: verdict=incorrect fault=declared\n";
  CandidateInput slow = input_at(150, wrong);
  EXPECT_EQ(candidates.judge(slow).verdict, Verdict::kIncorrect);
  slow.screen_time_first = true;
  CandidateOutcome screened = candidates.judge(slow);
  EXPECT_EQ(screened.verdict, Verdict::kScreened);
  ASSERT_TRUE(screened.verified);
  EXPECT_TRUE(screened.verified->screened);
  CandidateInput fast = input_at(80, wrong);
  fast.screen_time_first = true;
  EXPECT_EQ(candidates.judge(fast).verdict, Verdict::kIncorrect);
  CandidateInput unscreened = input_at(150, wrong, /*screen=*/false);
  unscreened.screen_time_first = true;  // without the screen it means nothing
  EXPECT_EQ(candidates.judge(unscreened).verdict, Verdict::kIncorrect);
  // Wrong at the timed shape too: the timing loop's checks reject it however slow.
  CandidateInput everywhere = input_at(150, "// test-evaluator: verdict=incorrect\n");
  everywhere.screen_time_first = true;
  EXPECT_EQ(candidates.judge(everywhere).verdict, Verdict::kIncorrect);
}

// The baseline (no best yet) and a task's first kernels get the whole gate: no bar to screen by.
TEST_F(ScreeningTest, NoBestNoScreen) {
  FakeEvaluator evaluator;
  CandidateEvaluator candidates(evaluator, *recorder_, nullptr);
  CandidateInput first = input_at(500);
  first.best_us = 0;
  EXPECT_EQ(candidates.judge(first).verdict, Verdict::kOk);
  EXPECT_EQ(evaluator.screened(), 0);
}

// A tuner-only night on the fake GPU: screened rows appear, no screened kernel ever has an 'ok'
// row, and no pair's faster side is a screened kernel.
TEST_F(ScreeningTest, ATunerNightScreensButNeverStoresAScreenedWin) {
  FakeEvaluator evaluator;
  auto cache = CompileCache(dir_ / "compile-cache");
  RunOptions o;
  o.task_dirs.push_back(kopt::testing::copy_task("axpy", dir_ / "night"));
  o.use_llm = false;
  o.drain_seconds = 10;
  o.max_in_flight = 1;
  OrchestratorDeps d;
  d.recorder = &*recorder_;
  d.evaluator = &evaluator;
  d.compile_cache = &cache;
  Orchestrator orchestrator(o, d);
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_GT(evaluator.screened(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'screened'"),
            evaluator.screened());
  EXPECT_EQ(count("SELECT count(*) FROM evaluations s JOIN evaluations o ON o.kernel_id = "
                  "s.kernel_id WHERE s.verdict = 'screened' AND o.verdict = 'ok'"),
            0);
  EXPECT_EQ(count("SELECT count(*) FROM pairs p JOIN evaluations e ON e.kernel_id = "
                  "(CASE WHEN p.is_negative THEN p.slow_kernel_id ELSE p.fast_kernel_id END) "
                  "WHERE e.verdict = 'screened'"),
            0);
  EXPECT_GT(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok'"), 1);
}

}  // namespace
}  // namespace kopt::orchestrator
