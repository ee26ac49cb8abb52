// Two nights on one database (issue 36): the second starts from what the first judged and pays
// for nothing twice. In-process: real tasks, real NVRTC, a real SQLite memory, the fake evaluator
// for the GPU and a scripted LLM replaying the kernels of tests/orchestrator/replay, the same
// script both nights (a model that answers what it answered before).
#include <gtest/gtest.h>

#include "agents/prompt_library.h"
#include "src/orchestrator/orchestrator.h"
#include "tests/agents/scripted_llm.h"
#include "tests/orchestrator/fake_evaluator.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::FakeEvaluator;
using kopt::testing::ScriptedLlm;
using kopt::testing::TempDir;

const char* kPlans = R"({"plans": [
  {"title": "float4 vectorized loads", "detail": "Move four floats per thread."},
  {"title": "several elements per thread", "detail": "ITEMS coalesced elements per thread."}]})";
const char* kLesson = R"({"lesson": "float4 accesses quarter the memory instructions.",
  "tags": ["vectorized-loads"]})";

class TwoNightsTest : public ::testing::Test {
 protected:
  TwoNightsTest() {
    kopt::testing::isolate_environment(dir_.path());
    StopSignal::instance().reset();
    auto store = memory::MemoryStore::open(dir_ / "memory.db");
    if (!store) throw std::runtime_error(store.error());
    store_.emplace(std::move(*store));
    auto prompts = agents::PromptLibrary::load(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts");
    if (!prompts) throw std::runtime_error(prompts.error());
    prompts_.emplace(std::move(*prompts));
    task_dir_ = kopt::testing::copy_task("axpy", dir_ / "tasks");
  }
  ~TwoNightsTest() override { StopSignal::instance().reset(); }

  // One night: a compile error, the float4 kernel, a kernel with a tail bug, then the unrolled
  // kernel for every later answer; the planner always proposes the same two plans.
  RunOutcome night(int memory_examples = SearchSettings{}.memory_examples) {
    ScriptedLlm llm;
    llm.set_default("planner", kPlans);
    llm.reply("coder", kopt::testing::replay_file("03_axpy_compile_error.txt"));
    llm.reply("coder", kopt::testing::replay_file("01_axpy_vec4.txt"));
    llm.reply("coder", kopt::testing::replay_file("06_axpy_tail_bug.txt"));
    llm.set_default("coder", kopt::testing::replay_file("05_axpy_unrolled.txt"));
    llm.set_default("summarizer", kLesson);
    RunOptions o;
    o.task_dirs = {task_dir_};
    o.use_llm = true;
    o.drain_seconds = 10;
    o.max_in_flight = 1;
    o.search.memory_examples = memory_examples;
    o.budgets.candidates_per_task = 40;
    o.stall.backoff_initial = std::chrono::milliseconds(20);
    FakeEvaluator evaluator;
    RunRecorder recorder(*store_);
    OrchestratorDeps d;
    d.recorder = &recorder;
    d.evaluator = &evaluator;
    d.llm = &llm;
    d.prompts = &*prompts_;
    d.coder_model = "scripted";
    Orchestrator orchestrator(o, d);
    auto outcome = orchestrator.run();
    if (!outcome) throw std::runtime_error(outcome.error());
    StopSignal::instance().reset();
    coder_prompts_ = llm.prompts("coder");
    planner_prompts_ = llm.prompts("planner");
    return *outcome;
  }

  int64_t count(const std::string& sql) {
    return kopt::testing::query_count(dir_ / "memory.db", sql);
  }
  // Night-2 evaluations of a kernel night 1 judged with a verdict matching `night1`. A tuner
  // configuration is a kernel file of its own (its values moved to the defaults, tuner.h), so
  // the kernel id is the (kernel, tunables) pair.
  int64_t judged_again(int64_t run2, const std::string& night1) {
    return count(
        "SELECT count(*) FROM evaluations e2 JOIN kernels k ON k.id = e2.kernel_id WHERE "
        "e2.run_id = " +
        std::to_string(run2) +
        " AND k.origin_agent != 'baseline' AND EXISTS (SELECT 1 FROM evaluations e1 WHERE "
        "e1.run_id = 1 AND e1.kernel_id = e2.kernel_id AND " +
        night1 + ")");
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  std::optional<agents::PromptLibrary> prompts_;
  std::filesystem::path task_dir_;
  std::vector<std::string> coder_prompts_;
  std::vector<std::string> planner_prompts_;
};

TEST_F(TwoNightsTest, TheSecondNightJudgesNothingTheFirstRejectedAndRepeatsOnlyItsWarmStart) {
  RunOutcome first = night();
  ASSERT_EQ(first.run_id, 1);
  ASSERT_GE(count("SELECT count(*) FROM evaluations WHERE run_id = 1 AND verdict != 'ok'"), 2)
      << "night 1 rejected the compile error and the tail bug";
  RunOutcome second = night();
  int64_t run2 = second.run_id;
  ASSERT_NE(run2, 1);
  // Nothing night 1 rejected is judged again (a screened kernel is no rejection: timed, slower)...
  EXPECT_EQ(judged_again(run2, "e1.verdict NOT IN ('ok', 'screened')"), 0);
  // ...and of what it verified or screened only the warm start's re-verifications (at most
  // warm_start_kernels, the baseline aside: it is every night's reference).
  int64_t repeated = judged_again(run2, "e1.verdict IN ('ok', 'screened')");
  EXPECT_GE(repeated, 1) << "the warm start re-verifies on purpose";
  EXPECT_LE(repeated, SearchSettings{}.warm_start_kernels);
  // The warm start is diverse: no two of its kernels are tuner copies of one kernel.
  EXPECT_EQ(count("SELECT count(DISTINCT CASE WHEN k.origin_tuner = 1 THEN k.parent_id ELSE k.id "
                  "END) FROM evaluations e JOIN kernels k ON k.id = e.kernel_id WHERE e.run_id = " +
                  std::to_string(run2) +
                  " AND k.origin_agent != 'baseline' AND e.kernel_id IN "
                  "(SELECT kernel_id FROM evaluations WHERE run_id = 1 AND verdict IN ('ok', "
                  "'screened'))"),
            repeated);
  // The coder repeating night 1's kernels is told what they scored, not judged again.
  bool told = false;
  for (const auto& p : coder_prompts_)
    told = told || p.find("(an earlier night)") != std::string::npos;
  EXPECT_TRUE(told);
  EXPECT_GE(second.progress.tasks.at(0).best_speedup, 1.25);
}

// What a night learned reaches the next one's planner as technique cards (issue 36).
TEST_F(TwoNightsTest, TheSecondNightReadsTechniqueCards) {
  night();
  night();
  bool card = false;
  for (const auto& p : planner_prompts_) {
    card = card || (p.find("What memory knows per technique") != std::string::npos &&
                    p.find("vector_loads: ") != std::string::npos &&
                    p.find("applies when: axpy") != std::string::npos);
  }
  EXPECT_TRUE(card) << (planner_prompts_.empty() ? "" : planner_prompts_.back());
}

// The random example slot, end to end (issue 36): night 2 shows one example a prompt, and memory
// holds more eligible pairs than that (night 1's steps off other branches), so the slot is drawn
// and each draw is logged with the pair shown, its propensity (1 / eligible candidates) and the
// prompt's parent. With four slots this one-task memory fills no prompt: every eligible pair is
// shown and there is nothing to randomise (retrieval.h, draw_example_slot).
TEST_F(TwoNightsTest, TheSecondNightLogsItsRandomExampleSlot) {
  night();
  RunOutcome second = night(/*memory_examples=*/1);
  std::string run2 = std::to_string(second.run_id);
  EXPECT_GE(count("SELECT count(*) FROM example_draws WHERE run_id = " + run2), 1);
  EXPECT_EQ(count("SELECT count(*) FROM example_draws WHERE run_id = " + run2 +
                  " AND (candidates < 1 OR abs(propensity * candidates - 1.0) > 1e-9"
                  " OR pair_id NOT IN (SELECT id FROM pairs) OR parent_kernel_id IS NULL)"),
            0);
  // The drawn pair is the one the prompt shows.
  EXPECT_EQ(count("SELECT count(*) FROM example_draws WHERE run_id = " + run2 +
                  " AND shown_pair_ids NOT LIKE '%' || pair_id || '%'"),
            0);
}

}  // namespace
}  // namespace kopt::orchestrator
