// Issue 13 end to end: the daemon as a process (kopt_test_daemon, the fake evaluator for the GPU)
// against the fake LLM server answering over HTTP as a model that stalls: repeats and
// near-repeats of its own kernels, answers cut at the token limit, refusals, tool calls, empty
// answers and the same three plans on every call. The search must notice and stop paying for
// it; a healthy model must not be held back.
#include <gtest/gtest.h>

#include "common/files.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/stall_scenario.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::contains;
using kopt::testing::StallReport;
using kopt::testing::StallScenario;

StallScenario stalling(bool anthropic) {
  StallScenario s;
  s.daemon = KOPT_TEST_DAEMON;
  s.anthropic = anthropic;
  // Back-off delays of a night (30 s doubling to 15 min) scaled down to a test's.
  s.daemon_config = {{"stall", {{"backoff_initial_s", 0.2}, {"backoff_max_s", 1}}}};
  return s;
}

std::string kinds(const StallReport& r) {
  std::string out = std::to_string(r.coder_calls) + " coder calls; the model served:";
  for (const auto& [kind, n] : r.model.by_kind) out += " " + kind + "=" + std::to_string(n);
  return out;
}

void expect_bounded(const StallScenario& s, const StallReport& r) {
  SCOPED_TRACE(r.stdout_text + kinds(r));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  // The model can write 24 distinct kernels per task; nearly all of them were judged.
  EXPECT_GE(r.new_kernels, 40);
  // The goal is 3. On an idle machine this model's junk share and planner repeats put it at 3.0
  // to 3.3 (8 runs); on a loaded 2-core CI machine more calls are in flight when a task parks
  // and they are paid for too (3.56 seen once), so the bound leaves room for that.
  EXPECT_LE(r.calls_per_new_kernel(), 3.75) << r.llm_calls << " calls";
  EXPECT_LE(r.usd_while_stalled, 0.1 * s.max_usd);
  // Both tasks were parked with the reason, in the status that `kopt status` shows.
  ASSERT_TRUE(r.status.is_object());
  int parked = 0;
  for (const auto& task : r.status["tasks"]) {
    if (task.value("state", "") == "parked") {
      ++parked;
      EXPECT_TRUE(contains(task.value("note", ""), "stalled: ")) << task.dump();
    }
    EXPECT_GT(task.value("repeats", 0), 0) << task.dump();
  }
  EXPECT_EQ(parked, 2) << r.status.dump(2);
}

TEST(StallTest, AStallingOpenAiModelIsNoticedAndItsCostStaysBounded) {
  kopt::testing::TempDir dir;
  StallScenario s = stalling(false);
  auto report = run_stall_scenario(s, dir.path());
  ASSERT_TRUE(report) << report.error();
  expect_bounded(s, *report);
  const std::string& log = report->log;
  // Repeats are logged with the kernel they repeat and its verdict.
  EXPECT_TRUE(contains(log, "is a repeat of kernel ")) << log;
  EXPECT_TRUE(contains(log, "which was incorrect")) << log;
  // A cut answer is asked for again with a larger limit; refusals and tool calls get a nudge.
  EXPECT_TRUE(contains(log, "asking again with max_tokens 8192")) << log;
  EXPECT_TRUE(contains(log, "refused; asking once more")) << log;
  EXPECT_TRUE(contains(log, "called a tool; asking once more")) << log;
  // The same three plans are accepted once, then refused as already tried.
  EXPECT_TRUE(contains(log, "plans already tried")) << log;
  // A stall that comes slowly backs the task off first; twelve junk answers in a row park it at
  // once. Which of the two happens depends on how the two tasks' calls interleave.
  EXPECT_TRUE(contains(log, "backing off") || contains(log, "of the last 12 coder answers")) << log;

  // The morning report says which tasks were parked and why.
  auto db = dir.path() / "memory.db", md = dir.path() / "report.md";
  auto out = kopt::testing::run_kopt(
      {"report", "--db", db.string(), "--run", "1", "--markdown", md.string()}, dir / "cache");
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto text = read_file(md);
  ASSERT_TRUE(text) << text.error();
  EXPECT_TRUE(contains(*text, "**softmax** was parked: stalled: ")) << *text;
}

TEST(StallTest, AStallingAnthropicModelIsNoticedAndItsCostStaysBounded) {
  kopt::testing::TempDir dir;
  StallScenario s = stalling(true);
  auto report = run_stall_scenario(s, dir.path());
  ASSERT_TRUE(report) << report.error();
  expect_bounded(s, *report);
  EXPECT_TRUE(contains(report->log, "refused; asking once more")) << report->log;
  EXPECT_TRUE(contains(report->log, "called a tool; asking once more")) << report->log;
}

TEST(StallTest, AHealthyModelIsNotHeldBack) {
  kopt::testing::TempDir dir;
  StallScenario s = stalling(false);
  s.model.faults = false;
  s.model.pool_per_task = 1000;
  s.candidates_per_task = 30;
  auto report = run_stall_scenario(s, dir.path());
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->exit_code, 0) << report->stderr_text;
  EXPECT_FALSE(contains(report->log, "backing off")) << report->log;
  EXPECT_FALSE(contains(report->log, "stalled")) << report->log;
  EXPECT_FALSE(contains(report->log, "spend rate")) << report->log;
  // One coder call per kernel (an answer that arrives after the candidate budget is used is not
  // judged: at most one per job in flight); besides, a planner call per three plans, lessons.
  EXPECT_LE(report->coder_calls - report->new_kernels, 4);
  EXPECT_GE(report->new_kernels, 20);
  for (const auto& task : report->status["tasks"]) {
    EXPECT_EQ(task.value("state", ""), "done") << task.dump();
    EXPECT_TRUE(contains(task.value("note", ""), "candidate budget of 30 used") ||
                contains(task.value("note", ""), "of speed of light"))
        << task.dump();
    EXPECT_EQ(task.value("repeats", -1), 0) << task.dump();
  }
}

}  // namespace
}  // namespace kopt::orchestrator
