// The sanitizer off the critical path (issue 35), on the CPU: the search loop with real tasks
// (copies of tasks/axpy and tasks/softmax), real NVRTC, a real SQLite memory, and the fake
// evaluator standing in for the GPU and for compute-sanitizer (its sanitize() sleeps like the
// tools and reports a scripted finding).
#include "src/orchestrator/sanitizer_lane.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/files.h"
#include "src/orchestrator/daemon_tables.h"
#include "src/orchestrator/orchestrator.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/fake_evaluator.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/log_capture.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::contains;
using kopt::testing::FakeEvaluator;
using kopt::testing::TempDir;
using namespace std::chrono_literals;

class SanitizerLaneTest : public ::testing::Test {
 protected:
  SanitizerLaneTest() {
    kopt::testing::isolate_environment(dir_.path());
    StopSignal::instance().reset();
    auto store = memory::MemoryStore::open(db_path());
    if (!store) throw std::runtime_error(store.error());
    store_.emplace(std::move(*store));
    recorder_.emplace(*store_);
    cache_.emplace(dir_ / "compile-cache");
  }
  ~SanitizerLaneTest() override { StopSignal::instance().reset(); }

  std::filesystem::path db_path() const { return dir_ / "memory.db"; }
  int64_t count(const std::string& sql) { return kopt::testing::query_count(db_path(), sql); }

  // Tuner-only with one job slot: without a lane, a sanitizer pass would hold the only slot.
  RunOptions options(std::vector<std::string> tasks, const std::string& folder = "tasks") {
    RunOptions o;
    for (const auto& t : tasks) o.task_dirs.push_back(kopt::testing::copy_task(t, dir_ / folder));
    o.use_llm = false;
    o.drain_seconds = 10;
    o.max_in_flight = 1;
    return o;
  }

  OrchestratorDeps deps(FakeEvaluator& evaluator, bool lane) {
    OrchestratorDeps d;
    d.recorder = &*recorder_;
    d.evaluator = &evaluator;
    d.compile_cache = &*cache_;
    if (lane) {
      d.sanitize = [this, &evaluator](const EvalRequest& request, int) {
        if (during_pass_) during_pass_(request);
        return evaluator.sanitize(request);
      };
    }
    return d;
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  std::optional<RunRecorder> recorder_;
  std::optional<CompileCache> cache_;
  std::function<void(const EvalRequest&)> during_pass_;  // what the test looks at mid-pass
};

// Two tasks, one job slot, a sanitizer pass as long as 20 evaluations: with the lane, the other
// task's (and the same task's) evaluations go on while a new best is sanitized; without it, the
// slot waits (the same run, so the test can tell the two apart).
TEST_F(SanitizerLaneTest, TheLaneNeverBlocksAnEvaluation) {
  FakeEvaluator::Options slow;
  slow.delay = 50ms;
  slow.sanitize_delay = 1000ms;
  FakeEvaluator with_lane(slow);
  {
    Orchestrator orchestrator(options({"axpy", "softmax"}), deps(with_lane, true));
    auto outcome = orchestrator.run();
    ASSERT_TRUE(outcome) << outcome.error();
    EXPECT_EQ(outcome->status, RunStatus::kFinished);
  }
  ASSERT_GE(with_lane.sanitized(), 1);
  EXPECT_GE(with_lane.evaluations_during_sanitize(), 1)
      << "no evaluation ran while the sanitizer did";
  // Every new best that passed is stored 'ok' after its 'sanitizing' row. On a loaded machine
  // the run may end while a later provisional best still waits for its pass: it stays
  // 'sanitizing' (logged "... were not sanitized before the end"), so rows >= passes.
  EXPECT_GE(count("SELECT count(*) FROM evaluations WHERE verdict = 'sanitizing'"),
            with_lane.sanitized());

  FakeEvaluator inline_pass(slow);
  TempDir other;
  auto store = memory::MemoryStore::open(other / "memory.db");
  ASSERT_TRUE(store) << store.error();
  RunRecorder recorder(*store);
  OrchestratorDeps d = deps(inline_pass, false);
  d.recorder = &recorder;
  Orchestrator orchestrator(options({"axpy", "softmax"}, "tasks-inline"), d);
  ASSERT_TRUE(orchestrator.run());
  ASSERT_GE(inline_pass.sanitized(), 1);
  EXPECT_EQ(inline_pass.evaluations_during_sanitize(), 0);
}

// A kernel that wins the tuner's sweep but fails its sanitizer pass: while the pass runs it is
// 'sanitizing' (no 'ok' row, so `kopt export` and the morning report never see it) with no pair;
// afterwards it has a 'sanitizer' verdict, no win, and the task's best falls back.
TEST_F(SanitizerLaneTest, AProvisionalBestThatFailsIsNeverExportedNorAWin) {
  FakeEvaluator::Options slow;
  slow.sanitize_delay = 300ms;
  FakeEvaluator evaluator(slow);
  RunOptions o = options({"axpy"});
  // Every configuration the tuner derives from this baseline carries the scripted finding; the
  // baseline itself is never sanitized (it is the reference point).
  auto baseline = o.task_dirs[0] / "baseline.cu";
  auto text = read_file(baseline);
  ASSERT_TRUE(text);
  ASSERT_TRUE(write_file_atomic(baseline, *text + "// test-evaluator: sanitizer=racecheck\n"));
  std::atomic<int> passes{0};
  std::atomic<int64_t> ok_during{-1}, pairs_during{-1}, sanitizing_during{-1};
  during_pass_ = [&](const EvalRequest&) {
    ++passes;
    ok_during = count(
        "SELECT count(*) FROM evaluations WHERE verdict = 'ok' AND median_us > 0"
        " AND speedup > 1.05");
    pairs_during = count("SELECT count(*) FROM pairs");
    sanitizing_during = count("SELECT count(*) FROM evaluations WHERE verdict = 'sanitizing'");
  };
  kopt::testing::LogCapture log;
  Orchestrator orchestrator(o, deps(evaluator, true));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  ASSERT_GE(passes.load(), 1);
  // At least the kernel under the pass is stored as 'sanitizing'; on a loaded machine a faster
  // tuner configuration can be a second provisional best by the time the pass looks (it failed
  // once with -j2 on the devbox, 2026-11-28).
  EXPECT_GE(sanitizing_during.load(), 1);
  EXPECT_EQ(ok_during.load(), 0) << "a provisional best was stored as ok";
  EXPECT_EQ(pairs_during.load(), 0) << "a provisional best was stored as a pair";
  // After the pass: the finding is its verdict, there is no faster 'ok' kernel and no win.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'sanitizer'"), passes.load());
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok' AND speedup > 1.05"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM pairs"), 0);
  auto wins = store_->wins({});
  ASSERT_TRUE(wins) << wins.error();
  EXPECT_TRUE(wins->empty());
  ASSERT_EQ(outcome->progress.tasks.size(), 1u);
  EXPECT_LT(outcome->progress.tasks[0].best_speedup, 1.05);
  EXPECT_NE(log.text().find("failed the sanitizer"), std::string::npos) << log.text();
}

// A search that ends with time left (every task done) leaves its provisional bests to the lane,
// which checks them all before the night ends: they are the night's results. Before, the lane
// got 3 s and the rest stayed 'sanitizing' (a tuner-only night on an H200 left ten of them so,
// with 115 s of its budget unused). Two tasks' tuner sweeps, passes of 4 s each, one lane.
TEST_F(SanitizerLaneTest, ASearchThatEndsEarlyChecksItsProvisionalBestsBeforeTheNightEnds) {
  FakeEvaluator::Options slow;
  slow.sanitize_delay = 4000ms;
  FakeEvaluator evaluator(slow);
  RunOptions o = options({"axpy", "softmax"});
  o.max_in_flight = 2;
  o.budgets.hours = 120.0 / 3600;  // time left: the search itself takes a second or two
  kopt::testing::LogCapture log;
  Orchestrator orchestrator(o, deps(evaluator, true));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  // A provisional best per task at least: more passes than the end's 3 s hold.
  const int64_t provisional =
      count("SELECT count(*) FROM evaluations WHERE verdict = 'sanitizing'");
  ASSERT_GE(provisional, 2) << log.text();
  EXPECT_EQ(outcome->progress.sanitizer_pending, 0);
  EXPECT_EQ(outcome->abandoned_jobs, 0);
  EXPECT_FALSE(contains(log.text(), "were not sanitized before the end")) << log.text();
  EXPECT_TRUE(contains(log.text(), "the sanitizer lane checks the")) << log.text();
  EXPECT_TRUE(outcome->progress.search_done_seconds);  // what the live table says meanwhile
  // Every provisional best got its pass (a source is sanitized once).
  EXPECT_EQ(evaluator.sanitized(), provisional);
}

// A task submitted (`kopt submit`) while the lane checks what an early-ended search left joins
// the run: the search goes on with it, and the run ends once both are done and checked. The
// first pass holds until the search says it is over, then submits softmax; the pass ends at
// once, so the submission comes between two of the run's 2-second polls (CI caught a run that
// ended without seeing it).
TEST_F(SanitizerLaneTest, ATaskSubmittedWhileTheLaneChecksJoinsTheSearch) {
  FakeEvaluator::Options slow;
  slow.sanitize_delay = 0ms;
  FakeEvaluator evaluator(slow);
  auto softmax = kopt::testing::copy_task("softmax", dir_ / "later");
  RunOptions o = options({"axpy"});
  o.budgets.hours = 120.0 / 3600;
  kopt::testing::LogCapture log;
  std::atomic<bool> submitted{false};
  during_pass_ = [&](const EvalRequest&) {
    if (submitted.exchange(true)) return;
    auto until = std::chrono::steady_clock::now() + 60s;
    while (!contains(log.text(), "search done at") && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(20ms);
    auto other = memory::MemoryStore::open(db_path());
    ASSERT_TRUE(other) << other.error();
    ASSERT_TRUE(submit_task(other->database(), softmax.string()));
  };
  Orchestrator orchestrator(o, deps(evaluator, true));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished) << log.text();
  ASSERT_EQ(outcome->progress.tasks.size(), 2u) << log.text();
  EXPECT_EQ(outcome->progress.tasks[1].name, "softmax");
  EXPECT_EQ(outcome->progress.tasks[1].state, "done");
  EXPECT_TRUE(contains(log.text(), "the search goes on")) << log.text();
  EXPECT_GT(count("SELECT count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id WHERE "
                  "t.name = 'softmax'"),
            0);
  EXPECT_EQ(outcome->progress.sanitizer_pending, 0);
}

// The same early end with a time budget shorter than the passes: the budget ends the night, the
// lane's queue is cut and said, as at any budget's end (passes of 6 s, a budget of 4 s: the
// first pass ends within the end's 3 s, the second never starts).
TEST_F(SanitizerLaneTest, TheTimeBudgetStillEndsTheLanesCheckOfWhatIsLeft) {
  FakeEvaluator::Options slow;
  slow.sanitize_delay = 6000ms;
  FakeEvaluator evaluator(slow);
  RunOptions o = options({"axpy", "softmax"});
  o.max_in_flight = 2;
  o.drain_seconds = 60;
  const double budget_s = 4;
  o.budgets.hours = budget_s / 3600;
  kopt::testing::LogCapture log;
  auto start = std::chrono::steady_clock::now();
  Orchestrator orchestrator(o, deps(evaluator, true));
  auto outcome = orchestrator.run();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kBudget) << log.text();
  EXPECT_LT(took, budget_s + 5) << "the lane's check ran past the time budget";
  EXPECT_TRUE(contains(log.text(), "stay 'sanitizing'")) << log.text();
}

// A new best within the measurement noise of the task's best is not worth the tools' time; one
// beyond it is sanitized. CandidateEvaluator alone, the fake evaluator as the GPU.
TEST_F(SanitizerLaneTest, NoiseLevelImprovementsAreNotSanitized) {
  EXPECT_FALSE(beats_beyond_noise(99.5, 0.002, 100, 0.002, 1.01));  // 1.005x: noise
  EXPECT_FALSE(beats_beyond_noise(98.5, 0.01, 100, 0.01, 1.01));    // 1.5% < 3 x 1.4% noise
  EXPECT_TRUE(beats_beyond_noise(95, 0.002, 100, 0.002, 1.01));
  EXPECT_TRUE(beats_beyond_noise(95, 0.0, 0, 0.0, 1.01));  // no best yet

  auto dir = kopt::testing::copy_task("axpy", dir_ / "tasks");
  auto spec = load_task(dir);
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_TRUE(recorder_->start_run("{}"));
  ASSERT_TRUE(recorder_->upsert_task(*spec));
  FakeEvaluator evaluator;
  CandidateEvaluator candidates(evaluator, *recorder_, nullptr);
  auto reference = read_file(dir / "reference.cu");
  auto baseline = read_file(dir / "baseline.cu");
  ASSERT_TRUE(reference && baseline);
  auto input_at = [&](double time_us) {
    CandidateInput input;
    input.task = &*spec;
    input.reference_source = *reference;
    input.baseline_source = *baseline;
    input.gpu = GpuIdentity{};
    input.gpu->model = "Fake H100 80GB HBM3";
    input.source = *baseline + "// test-evaluator: time_us=" + std::to_string(time_us) + "\n";
    input.origin = {Origin::kCoder, "m", "coder.txt", false};
    input.best_us = 100 * 1.1;  // the default BLOCK=256 costs the fake GPU 1.1x its time
    input.best_noise = 0.002;
    return input;
  };
  CandidateOutcome noise = candidates.judge(input_at(99.6));  // 1.004x the best
  EXPECT_TRUE(noise.noise_level);
  EXPECT_FALSE(noise.provisional);
  EXPECT_EQ(evaluator.sanitized(), 0);
  EXPECT_EQ(noise.verdict, Verdict::kOk);
  // Nor the profile pass's (0.3-1.9 s of GPU on an H100): a tie is not profiled.
  ASSERT_TRUE(noise.result);
  EXPECT_FALSE(noise.result->profile);

  CandidateOutcome real = candidates.judge(input_at(80));  // 1.25x
  EXPECT_FALSE(real.noise_level);
  EXPECT_EQ(evaluator.sanitized(), 1);  // without a lane: inside the evaluation, as before
  ASSERT_TRUE(real.result);
  EXPECT_TRUE(real.result->profile) << "a new best beyond the noise keeps its counters";

  candidates.set_sanitizer_lane(true);
  CandidateOutcome lane = candidates.judge(input_at(70));
  EXPECT_TRUE(lane.provisional);
  EXPECT_EQ(evaluator.sanitized(), 1);  // left to the lane
  ASSERT_TRUE(lane.sanitize_request);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'sanitizing'"), 1);
  EXPECT_TRUE(candidates.settle_provisional(lane, SanitizerOutcome{.ran = true}));
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok' AND kernel_id = " +
                  std::to_string(lane.kernel_id)),
            1);
}

// Every kernel beats_beyond_noise() lets through is under profile_below_us(), whatever its own
// noise: no kernel that is sanitized as a new best misses its profile.
TEST(ProfileThreshold, EveryKernelBeyondTheNoiseIsProfiled) {
  EXPECT_EQ(profile_below_us(0, 0.01, 1.01), 0);  // no best yet: every candidate
  EXPECT_DOUBLE_EQ(profile_below_us(100, 0.001, 1.01), 100 / 1.01);
  EXPECT_DOUBLE_EQ(profile_below_us(100, 0.01, 1.01), 100 / 1.03);  // 3 x the best's noise
  EXPECT_DOUBLE_EQ(profile_below_us(100, 0, 0.5), 100);             // never above the best
  int beyond = 0;
  for (double best_noise : {0.0, 0.001, 0.005, 0.02, 0.1}) {
    for (double candidate_noise : {0.0, 0.001, 0.01, 0.05}) {
      for (double us = 50; us <= 101; us += 0.05) {
        if (!beats_beyond_noise(us, candidate_noise, 100, best_noise, 1.01)) continue;
        ++beyond;
        EXPECT_LT(us, profile_below_us(100, best_noise, 1.01))
            << us << " us, noise " << candidate_noise << " against " << best_noise;
      }
    }
  }
  EXPECT_GT(beyond, 1000);
}

// How timing ended, as the run log's phase line says it and bench/daemon_throughput.py's TIMING
// pattern reads it: the candidate's samples, the baseline's where it was timed, the stop reason.
TEST(PhaseSteps, TimingTextSaysSamplesAndWhyTimingStopped) {
  EvalResult result;
  EXPECT_EQ(timing_text(result), "none");
  result.candidate_time = TimingSummary{};
  result.candidate_time->samples = 12;
  EXPECT_EQ(timing_text(result), "12 samples");
  result.baseline_time = TimingSummary{};
  result.baseline_time->samples = 30;
  result.timing_facts = {{"stop", "above the bar"}, {"hashed_samples", 11}};
  EXPECT_EQ(timing_text(result), "12 samples (baseline 30), stopped: above the bar");
  result.timing_facts = {{"stop", 3}};  // not a reason: left out
  EXPECT_EQ(timing_text(result), "12 samples (baseline 30)");
  result.timing_facts = {{"stop", "con\nverged" + std::string(100, 'x')}};  // one line, clipped
  std::string text = timing_text(result);
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_LT(text.size(), 100u) << text;
}

// The run log's phase line names every step the worker timed, what its total leaves unnamed and
// what the exchange cost beyond it: what bench/daemon_throughput.py sums.
TEST(PhaseSteps, EveryStepIsNamedWithTheUnnamedRestAndTheTransport) {
  EvalResult result;
  result.total_ms = 1000;
  result.phases = {{"kernels", 100.0},         {"kernels.compile", 60.0},
                   {"verify", 500.0},          {"time", 150.0},
                   {"profile", 200.0},         {"daemon.exchange", 1030.0},
                   {"daemon.gpu_wait", 400.0}, {"note", "not a number"}};
  result.verify_phases = {{"setup_ms", 12.5}, {"rounds", 9}, {"candidate_ms", 300.0}};
  std::string steps = phase_steps(result);
  for (const char* part : {"kernels 100.0", "kernels.compile 60.0", "verify 500.0", "time 150.0",
                           "profile 200.0", "daemon.gpu_wait 400.0", "daemon.transport 30.0",
                           "worker.unnamed 50.0", "verify.setup 12.5", "verify.candidate 300.0"})
    EXPECT_TRUE(contains(steps, part)) << part << " missing in: " << steps;
  EXPECT_FALSE(contains(steps, "rounds")) << steps;  // counts are no milliseconds
  EXPECT_FALSE(contains(steps, "note")) << steps;
  EXPECT_EQ(phase_steps(EvalResult{}), "");  // an older worker: the line just ends
}

TEST(SanitizerLaneModes, YieldingIsTheDefaultAndTheOthersAreNamed) {
  EXPECT_EQ(sanitizer_lane_mode(nullptr), SanitizerLaneMode::kYield);
  EXPECT_EQ(sanitizer_lane_mode("yield"), SanitizerLaneMode::kYield);
  EXPECT_EQ(sanitizer_lane_mode("hold"), SanitizerLaneMode::kHold);
  EXPECT_EQ(sanitizer_lane_mode("concurrent"), SanitizerLaneMode::kConcurrent);
  EXPECT_EQ(sanitizer_lane_mode("bogus"), SanitizerLaneMode::kYield);
  EXPECT_TRUE(contains(describe_sanitizer_lane_mode(SanitizerLaneMode::kHold), "hold"));
  EXPECT_TRUE(contains(describe_sanitizer_lane_mode(SanitizerLaneMode::kYield), "yielding"));
  EXPECT_TRUE(
      contains(describe_sanitizer_lane_mode(SanitizerLaneMode::kConcurrent), "not yielding"));

  SandboxOptions gpu;
  gpu.device = 1;
  gpu.extra_args = {"--output-log", "x"};
  auto yielding = lane_worker_options({gpu}, SanitizerLaneMode::kYield);
  ASSERT_EQ(yielding.size(), 1u);
  EXPECT_EQ(yielding[0].extra_args,
            (std::vector<std::string>{"--output-log", "x", "--yield-to-timing"}));
  EXPECT_EQ(yielding[0].device, 1);
  for (auto mode : {SanitizerLaneMode::kHold, SanitizerLaneMode::kConcurrent})
    EXPECT_EQ(lane_worker_options({gpu}, mode)[0].extra_args, gpu.extra_args);
}

// A pass beside a timer leaves the round past 2^31 elements to the gate: under a tool that round
// held the GPU's wide-round turn while the timer's gate waited for it. A held GPU keeps it.
TEST(SanitizerLaneModes, APassBesideATimerLeavesTheWideRoundToTheGate) {
  EXPECT_FALSE(lane_sanitizer_options(SanitizerLaneMode::kYield).wide_round);
  EXPECT_FALSE(lane_sanitizer_options(SanitizerLaneMode::kConcurrent).wide_round);
  EXPECT_TRUE(lane_sanitizer_options(SanitizerLaneMode::kHold).wide_round);
  EXPECT_TRUE(SanitizerOptions{}.wide_round);  // kopt export, kopt eval --sanitize
}

// Identical sources are sanitized once: the second submission gets the first one's outcome.
TEST_F(SanitizerLaneTest, IdenticalSourcesAreSanitizedOnce) {
  std::atomic<int> runs{0};
  SanitizerLane lane(
      [&](const EvalRequest&, int) {
        ++runs;
        std::this_thread::sleep_for(100ms);
        return SanitizerOutcome{.ran = true, .note = "fake"};
      },
      2);
  EvalRequest a, b;
  a.candidate.source = "kernel a";
  b.candidate.source = "kernel b";
  std::atomic<int> done{0};
  auto count_done = [&](const SanitizerOutcome& o) {
    EXPECT_TRUE(o.ran);
    ++done;
  };
  lane.submit(a, count_done);
  lane.submit(a, count_done);  // while the first is queued or running
  lane.submit(b, count_done);
  ASSERT_TRUE(lane.wait_idle(10));
  lane.submit(a, count_done);  // after it finished
  EXPECT_EQ(done.load(), 4);
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(lane.runs(), 2);

  // A source superseded before its turn (a faster best of its task waits) costs no pass.
  EvalRequest c;
  c.candidate.source = "kernel c";
  lane.submit(c, count_done, [] { return false; });
  ASSERT_TRUE(lane.wait_idle(10));
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(lane.skipped(), 1);
  EXPECT_EQ(done.load(), 4);
}

// Evaluations after the first `fast` ones wait until the test releases them (or a minute):
// work that cannot finish before a night's time budget ends.
class SlowAfter final : public Evaluator {
 public:
  SlowAfter(Evaluator& inner, int fast, std::function<void()> hold)
      : inner_(inner), fast_(fast), hold_(std::move(hold)) {}
  Result<EvalResult> evaluate(const EvalRequest& request) override {
    if (started_.fetch_add(1) >= fast_) hold_();
    return inner_.evaluate(request);
  }
  std::string name() const override { return "slow after " + std::to_string(fast_); }
  SanitizerOutcome sanitize(const EvalRequest& request) override {
    return inner_.sanitize(request);
  }

 private:
  Evaluator& inner_;
  int fast_;
  std::function<void()> hold_;
  std::atomic<int> started_{0};
};

// A night's time budget ends the night within a few seconds of its limit (issue 35), with the
// daemon's one-minute drain: evaluations and a sanitizer pass that would run on for a minute are
// cut at the deadline, and the outcome and the log say what was cut (a kernel whose pass was cut
// stays provisional).
TEST_F(SanitizerLaneTest, TheTimeBudgetBoundsTheDrainAndSaysWhatWasCut) {
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  auto hold = [&] {
    std::unique_lock lock(mutex);
    released_cv.wait_for(lock, 60s, [&] { return released; });
  };
  std::atomic<int> passes_started{0};
  during_pass_ = [&](const EvalRequest&) {
    ++passes_started;
    hold();
  };
  FakeEvaluator fake;
  SlowAfter evaluator(fake, 3, hold);  // the baseline and two configurations, then none ends
  RunOptions o = options({"axpy"});
  o.max_in_flight = 2;
  o.drain_seconds = 60;  // the daemon's default: the budget, not the drain, must end the night
  const double budget_s = 3;
  o.budgets.hours = budget_s / 3600;
  OrchestratorDeps d = deps(fake, true);
  d.evaluator = &evaluator;
  kopt::testing::LogCapture log;
  auto start = std::chrono::steady_clock::now();
  std::optional<Orchestrator> orchestrator;
  orchestrator.emplace(o, d);
  auto outcome = orchestrator->run();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard lock(mutex);
    released = true;  // the cut work may end now; the orchestrator's destructor waits for it
  }
  released_cv.notify_all();
  ASSERT_TRUE(outcome) << outcome.error();
  std::printf(
      "time budget %.0f s: the run took %.2f s; cut: %d jobs and sanitizer passes (%lld "
      "passes unfinished, %d started)\n",
      budget_s, took, outcome->abandoned_jobs,
      static_cast<long long>(outcome->progress.sanitizer_pending), passes_started.load());
  EXPECT_EQ(outcome->status, RunStatus::kBudget);
  EXPECT_LT(took, budget_s + 5) << "the drain ran past the time budget";
  EXPECT_GE(outcome->abandoned_jobs, 1);
  EXPECT_TRUE(contains(log.text(), "cut at the time budget")) << log.text();
  if (passes_started > 0) {
    EXPECT_GE(outcome->progress.sanitizer_pending, 1);
    EXPECT_TRUE(contains(log.text(), "stay 'sanitizing'")) << log.text();
  }
  orchestrator.reset();
}

}  // namespace
}  // namespace kopt::orchestrator
