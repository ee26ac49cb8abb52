// The search loop in-process: real tasks (copies of tasks/axpy and tasks/softmax), real NVRTC,
// a real SQLite memory, the fake evaluator for the GPU and a scripted LLM.
#include "src/orchestrator/orchestrator.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "agents/prompt_library.h"
#include "common/files.h"
#include "common/sha256.h"
#include "memory_store/production_baselines.h"
#include "sandbox/profile_bottleneck.h"
#include "src/orchestrator/daemon_tables.h"
#include "tests/agents/scripted_llm.h"
#include "tests/orchestrator/fake_evaluator.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/log_capture.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::FakeEvaluator;
using kopt::testing::ScriptedLlm;
using kopt::testing::TempDir;

const char* kPlans = R"({"plans": [
  {"title": "float4 vectorized loads", "detail": "Move four floats per thread."},
  {"title": "several elements per thread", "detail": "ITEMS coalesced elements per thread."}]})";
const char* kLesson = R"({"lesson": "float4 accesses quarter the memory instructions of a
bandwidth-bound kernel.", "tags": ["vectorized-loads"]})";

class OrchestratorTest : public ::testing::Test {
 protected:
  OrchestratorTest() {
    kopt::testing::isolate_environment(dir_.path());
    StopSignal::instance().reset();
    auto store = memory::MemoryStore::open(db_path());
    if (!store) throw std::runtime_error(store.error());
    store_.emplace(std::move(*store));
    recorder_.emplace(*store_);
    cache_.emplace(dir_ / "compile-cache");
  }
  ~OrchestratorTest() override { StopSignal::instance().reset(); }

  std::filesystem::path db_path() const { return dir_ / "memory.db"; }

  RunOptions options(std::vector<std::string> tasks, bool llm) {
    RunOptions o;
    for (const auto& t : tasks) o.task_dirs.push_back(kopt::testing::copy_task(t, dir_ / "tasks"));
    o.use_llm = llm;
    o.drain_seconds = 10;
    return o;
  }

  OrchestratorDeps deps(Evaluator& evaluator, LlmClient* llm = nullptr) {
    OrchestratorDeps d;
    d.recorder = &*recorder_;
    d.evaluator = &evaluator;
    d.llm = llm;
    if (llm) {
      auto prompts =
          agents::PromptLibrary::load(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts");
      if (!prompts) throw std::runtime_error(prompts.error());
      prompts_.emplace(std::move(*prompts));
      d.prompts = &*prompts_;
      d.coder_model = "scripted";
    }
    d.compile_cache = &*cache_;
    return d;
  }

  int64_t count(const std::string& sql) { return kopt::testing::query_count(db_path(), sql); }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  std::optional<RunRecorder> recorder_;
  std::optional<CompileCache> cache_;
  std::optional<agents::PromptLibrary> prompts_;
};

TEST_F(OrchestratorTest, TheTunerAloneFindsTheBestBlockSizeAndStoresEverything) {
  FakeEvaluator evaluator;
  Orchestrator orchestrator(options({"axpy"}, false), deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  EXPECT_EQ(outcome->stop_reason, "all 1 tasks are done");
  ASSERT_EQ(outcome->progress.tasks.size(), 1u);
  const TaskProgress& axpy = outcome->progress.tasks[0];
  EXPECT_EQ(axpy.note, "every tunable configuration tried");
  EXPECT_EQ(axpy.candidates, 3);              // BLOCK 128, 512 and 1024 besides the default 256
  EXPECT_NEAR(axpy.best_speedup, 1.1, 1e-9);  // BLOCK=512 is the fake GPU's optimum
  EXPECT_EQ(evaluator.evaluations(), 4);

  // Screened: 128 (0.92x) and 1024 (1.0x) are not faster than the best beyond the noise.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'screened'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM kernels WHERE origin_tuner = 1"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM llm_calls"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
  // One pair is large enough to keep: the default to BLOCK=512 (1.1x); 128 (0.92x) and 1024
  // (1.0x) are within the noise band.
  auto wins = store_->wins({});
  ASSERT_TRUE(wins) << wins.error();
  ASSERT_EQ(wins->size(), 1u);
  EXPECT_NEAR(wins->at(0).speedup, 1.1, 1e-9);
  EXPECT_NE(wins->at(0).summary.find("BLOCK=512 instead of the declared defaults (BLOCK=256)"),
            std::string::npos)
      << wins->at(0).summary;
  auto best = store_->kernel(wins->at(0).fast_kernel_id);
  ASSERT_TRUE(best && *best);
  EXPECT_NE((*best)->source.find("\"BLOCK\":[512,256,128,1024]"), std::string::npos)
      << (*best)->source;
  EXPECT_EQ((*best)->parent_id, wins->at(0).slow_kernel_id);
}

TEST_F(OrchestratorTest, TheLlmLoopRepairsVerifiesTunesAndLearns) {
  FakeEvaluator evaluator;
  ScriptedLlm llm;
  llm.set_default("planner", kPlans);
  // The first kernel does not compile; the repair is the float4 kernel.
  llm.reply("coder", kopt::testing::replay_file("03_axpy_compile_error.txt"));
  llm.reply("coder", kopt::testing::replay_file("01_axpy_vec4.txt"));
  llm.set_default("coder", kopt::testing::replay_file("05_axpy_unrolled.txt"));
  llm.set_default("summarizer", kLesson);
  RunOptions o = options({"axpy"}, true);
  o.max_in_flight = 1;  // one job at a time: the order of the replies is the order of the asks
  o.budgets.candidates_per_task = 16;
  o.stall.backoff_initial = std::chrono::milliseconds(20);
  Orchestrator orchestrator(o, deps(evaluator, &llm));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  const TaskProgress& axpy = outcome->progress.tasks.at(0);
  // The scripted planner proposes the same two plans every time. A plan tried on one kernel is
  // new on another (tried is not applied), so they are developed again from the new bests; the
  // scripted coder answers with kernels already judged, which are not evaluated again, and after
  // 12 such repeats the task is parked.
  EXPECT_EQ(axpy.state, "parked");
  EXPECT_EQ(axpy.note, "stalled: 12 of the last 12 coder answers were repeats");
  // The baseline, 3 tuner configurations, the compile error, vec4, 2 of its configurations,
  // the unrolled kernel and 5 of its configurations: 14 evaluations, 13 candidates.
  EXPECT_EQ(axpy.candidates, 13);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations"), 14);
  EXPECT_EQ(llm.prompts("planner").size(), 4u);
  // What this kernel's lineage already tried is listed to the planner with its outcome.
  EXPECT_NE(llm.prompts("planner").back().find("float4 vectorized loads"), std::string::npos)
      << llm.prompts("planner").back();
  // The vec4 kernel tuned to BLOCK=512: 85 us against the baseline's 110.
  EXPECT_NEAR(axpy.best_speedup, 110.0 / 85.0, 1e-9);

  // Every judged kernel is in the memory, the compile error with its log.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'compile_error' AND detail "
                  "LIKE '%alpah%'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM kernels WHERE origin_agent = 'coder' AND "
                  "origin_prompt_template = 'coder.txt' AND source LIKE '%alpah%'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM kernels WHERE origin_agent = 'coder' AND "
                  "origin_prompt_template = 'repair.txt' AND source LIKE '%axpy_vec4%'"),
            1);
  // The repair prompt showed the compile log.
  auto coder_prompts = llm.prompts("coder");
  ASSERT_GE(coder_prompts.size(), 2u);
  EXPECT_NE(coder_prompts[1].find("alpah"), std::string::npos);
  EXPECT_NE(coder_prompts[1].find("compile_error"), std::string::npos);

  // The pair parent -> vec4 carries the summarizer's lesson and tags.
  EXPECT_GE(count("SELECT count(*) FROM pairs p JOIN kernels k ON k.id = p.fast_kernel_id WHERE "
                  "k.source LIKE '%axpy_vec4%' AND p.summary LIKE 'float4 accesses quarter%' AND "
                  "p.tags LIKE '%vectorized-loads%'"),
            1);
  // The first plan starts from the tuned baseline: the tuner's pair that made it is where the
  // model already is, so it is not shown back as an example (retrieval.h).
  auto planner_prompts = llm.prompts("planner");
  ASSERT_GE(planner_prompts.size(), 1u);
  EXPECT_EQ(planner_prompts[0].find("Tuning the axpy kernel"), std::string::npos);
  // Every planner and coder prompt opens with the task's contract, the same text each time.
  std::string contract = planner_prompts[0].substr(0, planner_prompts[0].find("# Task:"));
  EXPECT_EQ(contract.rfind("# Contract of task axpy", 0), 0u) << contract;
  for (const auto& p : planner_prompts) EXPECT_EQ(p.rfind(contract, 0), 0u);
  for (const auto& p : llm.prompts("coder")) EXPECT_EQ(p.rfind(contract, 0), 0u);
  EXPECT_GE(count("SELECT max(retrieved_count) FROM pairs"), 1);
  // New kernels with tunables were tuned too.
  EXPECT_GE(count("SELECT count(*) FROM kernels WHERE origin_tuner = 1 AND source LIKE "
                  "'%axpy_vec4%'"),
            1);
}

TEST_F(OrchestratorTest, ASecondRunsFirstPlanStartsFromTheFirstRunsBestKernel) {
  auto script = [](ScriptedLlm& llm) {
    llm.set_default("planner", kPlans);
    llm.reply("coder", kopt::testing::replay_file("01_axpy_vec4.txt"));
    llm.set_default("coder", kopt::testing::replay_file("05_axpy_unrolled.txt"));
    llm.set_default("summarizer", kLesson);
  };
  RunOptions o = options({"axpy"}, true);
  o.max_in_flight = 1;
  o.budgets.candidates_per_task = 12;
  o.stall.backoff_initial = std::chrono::milliseconds(20);
  {
    FakeEvaluator evaluator;
    ScriptedLlm llm;
    script(llm);
    Orchestrator first(o, deps(evaluator, &llm));
    auto outcome = first.run();
    ASSERT_TRUE(outcome) << outcome.error();
  }
  int64_t best = count(
      "SELECT e.kernel_id FROM evaluations e JOIN kernels k ON k.id = e.kernel_id WHERE "
      "e.verdict = 'ok' ORDER BY e.speedup DESC, e.kernel_id LIMIT 1");
  std::string best_source = kopt::testing::query_text(
      db_path(), "SELECT source FROM kernels WHERE id = " + std::to_string(best));
  ASSERT_NE(best_source.find("axpy_vec4"), std::string::npos) << best_source;
  StopSignal::instance().reset();

  RunRecorder second_recorder(*store_);
  FakeEvaluator evaluator;
  ScriptedLlm llm;
  script(llm);
  OrchestratorDeps d = deps(evaluator, &llm);
  d.recorder = &second_recorder;
  Orchestrator second(o, d);
  auto outcome = second.run();
  ASSERT_TRUE(outcome) << outcome.error();
  ASSERT_NE(outcome->run_id, 1);
  // The best kernel was judged again by this run before it counted...
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'ok' AND kernel_id = " +
                  std::to_string(best) + " AND run_id = " + std::to_string(outcome->run_id)),
            1);
  // ...and the run's first plan starts from it.
  auto planner_prompts = llm.prompts("planner");
  ASSERT_GE(planner_prompts.size(), 1u);
  std::string first_prompt = planner_prompts[0];
  size_t kernel_at = first_prompt.find("## The kernel to improve");
  ASSERT_NE(kernel_at, std::string::npos);
  EXPECT_EQ(first_prompt.find(best_source), first_prompt.find("```cuda\n", kernel_at) + 8)
      << first_prompt.substr(kernel_at, 600);
  EXPECT_GE(outcome->progress.tasks.at(0).best_speedup, 1.25);
}

TEST_F(OrchestratorTest, TheCostBudgetStopsTheRunAndSaysSo) {
  FakeEvaluator evaluator;
  ScriptedLlm llm;
  llm.set_cost_per_call(0.4);
  llm.set_default("planner", kPlans);
  llm.set_default("coder", kopt::testing::replay_file("03_axpy_compile_error.txt"));
  RunOptions o = options({"axpy"}, true);
  o.budgets.max_usd = 1.0;
  Orchestrator orchestrator(o, deps(evaluator, &llm));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kBudget);
  EXPECT_NE(outcome->stop_reason.find("LLM cost budget of $1.00 ran out"), std::string::npos)
      << outcome->stop_reason;
  EXPECT_GE(outcome->progress.cost_usd, 1.0);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'budget'"), 1);
}

TEST_F(OrchestratorTest, APerTaskLlmCapParksTheTaskAndSaysSo) {
  FakeEvaluator evaluator;
  ScriptedLlm llm;
  llm.set_cost_per_call(0.4);
  llm.set_default("planner", kPlans);
  llm.set_default("coder", kopt::testing::replay_file("01_axpy_vec4.txt"));
  llm.set_default("summarizer", kLesson);
  RunOptions o = options({"axpy"}, true);
  o.max_in_flight = 1;
  o.budgets.max_usd_per_task = 1.0;
  Orchestrator orchestrator(o, deps(evaluator, &llm));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome->stop_reason;
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  const TaskProgress& axpy = outcome->progress.tasks.at(0);
  EXPECT_EQ(axpy.state, "parked");
  EXPECT_NE(axpy.note.find("its LLM budget of $1.00 is spent"), std::string::npos) << axpy.note;
  // The call that crossed the cap was the last one: the planner, the coder, the lesson.
  EXPECT_LE(llm.requests().size(), 3u);
  EXPECT_GE(axpy.cost_usd, 1.0);
}

// The same loop with and without the spend-rate alarm: every call costs $0.10, and the stall
// detector is turned off so that only the alarm can hold the model back. Six seconds: on a loaded
// 2-core machine three seconds sometimes ended before the free run's third call (each candidate
// goes through the confined compiler, a process of its own).
RunProgress run_for_six_seconds(OrchestratorDeps deps, RunOptions o,
                                std::optional<double> max_usd_per_hour) {
  o.budgets.hours = 6.0 / 3600;
  o.budgets.max_usd_per_hour = max_usd_per_hour;
  o.stall.window = 100000;
  o.stall.min_new_share = 0;
  o.stall.park_new_share = -1;
  o.stall.park_dry_calls = 100000;
  o.stall.planner_stale_answers = 100000;
  o.stall.backoff_initial = std::chrono::milliseconds(1);
  o.stall.backoff_max = std::chrono::milliseconds(1);
  Orchestrator orchestrator(o, deps);
  auto outcome = orchestrator.run();
  EXPECT_TRUE(outcome);
  EXPECT_EQ(outcome->status, RunStatus::kBudget);
  return outcome->progress;
}

TEST_F(OrchestratorTest, TheSpendRateAlarmHoldsLlmWorkBackAndSaysSo) {
  FakeEvaluator evaluator;
  ScriptedLlm fast, held;
  for (ScriptedLlm* llm : {&fast, &held}) {
    llm->set_cost_per_call(0.1);
    llm->set_default("planner", kPlans);
    llm->set_default("coder", kopt::testing::replay_file("05_axpy_unrolled.txt"));
    llm->set_default("summarizer", kLesson);
  }
  RunOptions o = options({"axpy"}, true);
  o.max_in_flight = 1;
  RunProgress free_run = run_for_six_seconds(deps(evaluator, &fast), o, std::nullopt);
  // The planner, then the coder for its plans: more than the one call of the held run below
  // (3 or more on an idle machine; a loaded 2-core machine got 2 in the six seconds).
  EXPECT_GE(fast.requests().size(), 2u);
  EXPECT_EQ(free_run.alarm, "");
  // $0.10 in the last 10 minutes is $0.60 an hour: above $0.50, so after the planner's first
  // call nothing more is asked for the rest of the run, and the status says why.
  RunProgress held_run = run_for_six_seconds(deps(evaluator, &held), o, 0.5);
  EXPECT_EQ(held.requests().size(), 1u);
  EXPECT_NE(held_run.alarm.find("spend rate $0.60/h over the last 10m00s is above "
                                "daemon.budgets.max_usd_per_hour ($0.50/h)"),
            std::string::npos)
      << held_run.alarm;
}

TEST_F(OrchestratorTest, TheTimeBudgetStopsTheRunAndSaysSo) {
  FakeEvaluator::Options slow;
  slow.delay = std::chrono::milliseconds(300);
  FakeEvaluator evaluator(slow);
  RunOptions o = options({"axpy", "softmax"}, false);
  o.budgets.hours = 1.0 / 3600;  // one second
  auto start = std::chrono::steady_clock::now();
  Orchestrator orchestrator(o, deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kBudget);
  EXPECT_NE(outcome->stop_reason.find("time budget"), std::string::npos) << outcome->stop_reason;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_GT(evaluator.evaluations(), 0);
  // Every evaluation begun is stored, or cut at the budget's deadline and said (on a loaded
  // machine the fake's NVRTC compile can outlast the few seconds the budget allows).
  int64_t stored = count("SELECT count(*) FROM evaluations");
  EXPECT_LE(stored, evaluator.evaluations());
  EXPECT_GE(stored + outcome->abandoned_jobs, evaluator.evaluations());
}

TEST_F(OrchestratorTest, AStopRequestDrainsInFlightWorkAndKeepsIt) {
  FakeEvaluator::Options slow;
  slow.delay = std::chrono::milliseconds(400);
  FakeEvaluator evaluator(slow);
  RunOptions o = options({"axpy", "softmax"}, false);
  o.max_in_flight = 2;
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    StopSignal::instance().request(SIGTERM);
  });
  Orchestrator orchestrator(o, deps(evaluator));
  auto outcome = orchestrator.run();
  stopper.join();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kInterrupted);
  EXPECT_EQ(outcome->stop_reason, "interrupted by SIGTERM");
  EXPECT_EQ(outcome->abandoned_jobs, 0);
  // What was in flight when the stop came finished and was stored.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations"), evaluator.evaluations());
  EXPECT_LT(evaluator.evaluations(), 8);  // it did not go on to finish both tasks
  EXPECT_EQ(evaluator.max_concurrent(), 2);
}

TEST_F(OrchestratorTest, AResumedRunRedoesNothing) {
  FakeEvaluator::Options slow;
  slow.delay = std::chrono::milliseconds(150);
  FakeEvaluator first_evaluator(slow);
  RunOptions o = options({"axpy"}, false);
  o.max_in_flight = 1;  // one at a time, so the stop comes before the sweep is over
  int64_t run_id = 0;
  {
    std::thread stopper([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      StopSignal::instance().request(SIGINT);
    });
    Orchestrator first(o, deps(first_evaluator));
    auto outcome = first.run();
    stopper.join();
    ASSERT_TRUE(outcome) << outcome.error();
    ASSERT_EQ(outcome->status, RunStatus::kInterrupted);
    run_id = outcome->run_id;
  }
  int before = first_evaluator.evaluations();
  ASSERT_GT(before, 0);
  ASSERT_LT(before, 4);
  StopSignal::instance().reset();
  FakeEvaluator second_evaluator;
  Orchestrator second(o, deps(second_evaluator));
  auto outcome = second.run(run_id);
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  EXPECT_EQ(outcome->run_id, run_id);
  EXPECT_EQ(before + second_evaluator.evaluations(), 4);
  EXPECT_EQ(outcome->progress.tasks.at(0).candidates, 3);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations"), 4);
  EXPECT_EQ(count("SELECT count(DISTINCT kernel_id) FROM evaluations"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 1);
}

TEST_F(OrchestratorTest, ASubmittedTaskJoinsTheRun) {
  FakeEvaluator::Options slow;
  slow.delay = std::chrono::milliseconds(200);
  FakeEvaluator evaluator(slow);
  auto softmax = kopt::testing::copy_task("softmax", dir_ / "later");
  std::thread submitter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto other = memory::MemoryStore::open(db_path());
    ASSERT_TRUE(other);
    ASSERT_TRUE(submit_task(other->database(), softmax.string()));
  });
  Orchestrator orchestrator(options({"axpy"}, false), deps(evaluator));
  auto outcome = orchestrator.run();
  submitter.join();
  ASSERT_TRUE(outcome) << outcome.error();
  ASSERT_EQ(outcome->progress.tasks.size(), 2u);
  EXPECT_EQ(outcome->progress.tasks[1].name, "softmax");
  EXPECT_EQ(outcome->progress.tasks[1].state, "done");
  EXPECT_EQ(count("SELECT count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id WHERE "
                  "t.name = 'softmax'"),
            4);
}

TEST_F(OrchestratorTest, ABaselineThatFailsFailsItsTaskAndTheRun) {
  FakeEvaluator evaluator;
  auto task = kopt::testing::copy_task("axpy", dir_ / "tasks");
  kopt::testing::write_text(task / "baseline.cu",
                            kopt::testing::replay_kernel("06_axpy_tail_bug.txt"));
  RunOptions o;
  o.task_dirs = {task};
  o.use_llm = false;
  Orchestrator orchestrator(o, deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFailed);
  EXPECT_NE(outcome->stop_reason.find("the baseline does not verify: out_of_bounds"),
            std::string::npos)
      << outcome->stop_reason;
}

TEST_F(OrchestratorTest, ATaskThatDoesNotLoadIsAnErrorBeforeAnyWork) {
  FakeEvaluator evaluator;
  RunOptions o;
  o.task_dirs = {dir_ / "missing"};
  Orchestrator orchestrator(o, deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_FALSE(outcome);
  EXPECT_NE(outcome.error().find("no task could be loaded"), std::string::npos) << outcome.error();
  EXPECT_EQ(evaluator.evaluations(), 0);
}

// The GPU is shared (a user's job): every timed candidate comes back gpu_busy, as the sandbox
// evaluator returns it once its pauses ran out. The baseline still verifies (it came first).
class SharedGpuEvaluator final : public Evaluator {
 public:
  Result<EvalResult> evaluate(const EvalRequest& request) override {
    auto result = inner_.evaluate(request);
    if (!result || !request.baseline) return result;
    EvalResult busy;
    busy.verdict = Verdict::kGpuBusy;
    busy.detail = "the GPU is not ours alone before timing: 1 other process on this GPU";
    busy.device = result->device;
    return busy;
  }
  std::string name() const override { return "shared GPU"; }

 private:
  FakeEvaluator inner_;
};

TEST_F(OrchestratorTest, ABusyGpuNeverBecomesAResultAWinOrAFailureOfTheTask) {
  SharedGpuEvaluator evaluator;
  Orchestrator orchestrator(options({"axpy"}, false), deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  // Only the baseline's evaluation is stored: nothing from the busy GPU, no pair, no win.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict = 'gpu_busy'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM pairs"), 0);
  ASSERT_EQ(outcome->progress.tasks.size(), 1u);
  EXPECT_EQ(outcome->progress.tasks[0].candidates, 0);
  EXPECT_EQ(outcome->progress.tasks[0].note.find("the evaluator keeps failing"), std::string::npos)
      << outcome->progress.tasks[0].note;
}

// One verified evaluation as stored, in the order the daemon judged them.
struct StoredEvaluation {
  std::string origin;  // the kernel's origin_agent ("baseline", "coder"), "tuner" for the tuner's
  double median_us = 0;
  std::string profile_json;
};

std::vector<StoredEvaluation> verified_evaluations(const std::filesystem::path& db) {
  auto database = sql::Database::open(db, {});
  if (!database) throw std::runtime_error(database.error());
  auto statement = database->prepare(
      "SELECT CASE WHEN k.origin_tuner THEN 'tuner' ELSE k.origin_agent END, e.median_us,"
      " e.profile_json FROM evaluations e JOIN kernels k ON k.id = e.kernel_id"
      " WHERE e.verdict = 'ok' ORDER BY e.id");
  if (!statement) throw std::runtime_error(statement.error());
  std::vector<StoredEvaluation> rows;
  while (true) {
    auto row = statement->step();
    if (!row) throw std::runtime_error(row.error());
    if (!*row) return rows;
    rows.push_back(
        {statement->column_text(0), statement->column_double(1), statement->column_text(2)});
  }
}

KernelProfile stored_profile(const std::string& profile_json) {
  auto profile = kernel_profile_from_json(nlohmann::json::parse(profile_json));
  if (!profile) throw std::runtime_error(profile.error());
  return *profile;
}

// Issue 14 end to end: the daemon asks for counters on every new best, the (fake) worker answers
// for those only, the real store keeps them with the evaluation, and the planner's next prompt
// shows where the best kernel's time goes. A beam of one makes every planner prompt start from
// the task's best kernel at that moment.
TEST_F(OrchestratorTest, ANewBestsProfileReachesTheStoreAndTheNextPlannerPrompt) {
  FakeEvaluator evaluator;
  ScriptedLlm llm;
  llm.set_default("planner", kPlans);
  llm.reply("coder", kopt::testing::replay_file("01_axpy_vec4.txt"));
  llm.set_default("coder", kopt::testing::replay_file("05_axpy_unrolled.txt"));
  llm.set_default("summarizer", kLesson);
  RunOptions o = options({"axpy"}, true);
  o.max_in_flight = 1;  // one job at a time: "the best so far" is the order of evaluation
  o.search.beam_width = 1;
  o.stall.backoff_initial = std::chrono::milliseconds(20);
  // Every kernel verified 'ok' (the whole gate), so that the rows below hold the ones that were
  // not new bests too; with screening they would be 'screened' and never profiled either.
  o.search.screen = false;
  Orchestrator orchestrator(o, deps(evaluator, &llm));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);

  // Exactly the new bests carry counters: the baseline (the first), then each verified kernel
  // faster than every one before it. The others were not profiled.
  auto rows = verified_evaluations(db_path());
  ASSERT_GE(rows.size(), 8u);
  double best = 0;
  int profiled = 0, not_profiled = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    bool new_best = best == 0 || rows[i].median_us < best;
    EXPECT_EQ(rows[i].profile_json != "{}", new_best)
        << "evaluation " << i << " (" << rows[i].origin << ", " << rows[i].median_us << " us)";
    (new_best ? profiled : not_profiled)++;
    if (new_best) best = rows[i].median_us;
  }
  EXPECT_GE(profiled, 3);  // the baseline, its tuned BLOCK=512, the float4 kernel (and tuned)
  EXPECT_GE(not_profiled, 3);
  ASSERT_EQ(rows[0].origin, "baseline");
  KernelProfile baseline = stored_profile(rows[0].profile_json);
  EXPECT_NEAR(baseline.dram_percent, 100.0 * 50 / 110, 1e-9);  // sol 50 us of 110 us
  EXPECT_NEAR(best, 85.0, 1e-9);                               // the float4 kernel at BLOCK=512
  std::string best_json = kopt::testing::query_text(
      db_path(),
      "SELECT profile_json FROM evaluations WHERE verdict = 'ok' ORDER BY median_us,"
      " id LIMIT 1");
  KernelProfile best_profile = stored_profile(best_json);
  EXPECT_NEAR(best_profile.dram_percent, 100.0 * 50 / 85, 1e-9);

  // The first planner prompt started from the tuned baseline (100 us, DRAM 50%); the last one
  // from the best kernel, with the line built from its stored numbers and its class.
  auto planner_prompts = llm.prompts("planner");
  ASSERT_GE(planner_prompts.size(), 2u);
  EXPECT_NE(planner_prompts.front().find("DRAM 50% of peak"), std::string::npos)
      << planner_prompts.front();
  std::string best_line = describe_profile_and_bottleneck(best_profile);
  EXPECT_NE(best_line.find("DRAM 59% of peak"), std::string::npos) << best_line;
  EXPECT_NE(best_line.find(" -> bound by memory latency"), std::string::npos) << best_line;
  EXPECT_NE(planner_prompts.back().find("## Where the time goes (hardware counters at the timed "
                                        "shape)\n\n" +
                                        best_line),
            std::string::npos)
      << planner_prompts.back();
  EXPECT_EQ(planner_prompts.front().find(best_line), std::string::npos);
}

// Without counter permission the fake worker answers every new best with the note instead of a
// profile: the run goes on as before, stores no counters, and says it once.
TEST_F(OrchestratorTest, WithoutProfilingTheRunGoesOnAndSaysSoOnce) {
  FakeEvaluator evaluator;
  auto task = kopt::testing::copy_task("axpy", dir_ / "tasks");
  auto baseline = read_file(task / "baseline.cu");
  ASSERT_TRUE(baseline) << baseline.error();
  const std::string note =
      "profiling unavailable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (ERR_NVGPUCTRPERM)";
  kopt::testing::write_text(task / "baseline.cu",
                            *baseline + "// test-evaluator: profile_note=" + note + "\n");
  RunOptions o;
  o.task_dirs = {task};
  o.use_llm = false;
  o.max_in_flight = 1;
  kopt::testing::LogCapture log;
  Orchestrator orchestrator(o, deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  EXPECT_NEAR(outcome->progress.tasks.at(0).best_speedup, 1.1, 1e-9);  // the tuner still won
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE verdict IN ('ok', 'screened')"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations WHERE profile_json != '{}'"), 0);
  // Two new bests (the baseline and BLOCK=512) each got the note; the log has it once.
  std::string text = log.text();
  size_t first = text.find(note);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(note, first + 1), std::string::npos) << text;
}

// A production baseline measured for axpy on the fake GPU model: torch.compile at 1000 us, slow
// beside baseline.cu's 110 us and the 50 us bound.
void add_slow_production_baseline(memory::MemoryStore& store) {
  memory::ProductionBaselineRecord row;
  row.task = "axpy";
  row.gpu_model = "Fake H100 80GB HBM3";
  row.name = "torch_compile";
  row.median_us = 1000;
  ASSERT_TRUE(memory::add_production_baseline(store.database(), row).ok());
}

// With it S decides: baseline.cu alone is at S 0.94, so the task is done before the tuner
// starts, and the log says what the task is judged by.
TEST_F(OrchestratorTest, AProductionBaselineLetsTheSolScoreStopTheTask) {
  add_slow_production_baseline(*store_);
  FakeEvaluator evaluator;
  kopt::testing::LogCapture log;
  Orchestrator orchestrator(options({"axpy"}, false), deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->status, RunStatus::kFinished);
  EXPECT_EQ(outcome->progress.tasks.at(0).note,
            "reached S 0.94 against torch_compile (threshold 0.90)");
  EXPECT_EQ(evaluator.evaluations(), 1);
  EXPECT_NE(log.text().find("[axpy] judged by S against torch_compile (1000.00 us on Fake H100 "
                            "80GB HBM3): done at S 0.90"),
            std::string::npos)
      << log.text();
}

// Judged by %SOL (45% SOL), the same task runs its tuner as before production baselines existed.
TEST_F(OrchestratorTest, ByPercentOfSolAProductionBaselineChangesNothing) {
  add_slow_production_baseline(*store_);
  FakeEvaluator evaluator;
  RunOptions by_sol = options({"axpy"}, false);
  by_sol.search.score = ScoreBasis::kSolPercent;
  Orchestrator orchestrator(by_sol, deps(evaluator));
  auto outcome = orchestrator.run();
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(outcome->progress.tasks.at(0).note, "every tunable configuration tried");
  EXPECT_EQ(evaluator.evaluations(), 4);
}

}  // namespace
}  // namespace kopt::orchestrator
