// What the report gathers from a real memory: scope, bests, verdicts, series over time, wins.
#include "src/report/report_data.h"

#include <gtest/gtest.h>

#include <cmath>

#include "src/report/markup.h"
#include "tests/report/report_fixture.h"

namespace kopt::report {
namespace {

using memory::testing::TempDir;
using testing::build_night_memory;

class ReportDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(memory::testing::open_store(dir_ / "memory.db"));
    night_ = build_night_memory(*store_);
  }
  ReportData load(std::optional<int64_t> run) {
    ReportScope scope;
    scope.run_id = run;
    auto data = load_report_data(*store_, "memory.db", scope);
    EXPECT_TRUE(data.ok()) << data.error();
    return data.ok() ? std::move(*data) : ReportData{};
  }
  const TaskSummary& task(const ReportData& data, const std::string& name) {
    for (const auto& t : data.tasks) {
      if (t.task == name) return t;
    }
    throw std::runtime_error("no task " + name);
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  testing::NightMemory night_;
};

TEST_F(ReportDataTest, RunScopeHoldsOnlyThatRunsTasks) {
  ReportData data = load(night_.night_run);
  ASSERT_TRUE(data.run.has_value());
  EXPECT_EQ(data.run->id, night_.night_run);
  ASSERT_EQ(data.tasks.size(), 3u);
  EXPECT_EQ(data.tasks[0].task, "bf16_gemm");  // by name
  EXPECT_EQ(data.tasks[1].task, "rmsnorm");
  EXPECT_EQ(data.tasks[2].task, "softmax");
  // Candidates as status counts them: the three baselines' evaluations are not candidates.
  EXPECT_EQ(data.evaluations, 11);
  EXPECT_EQ(data.verified, 4);
  EXPECT_EQ(data.start, "2026-11-22T00:00:00Z");
  EXPECT_DOUBLE_EQ(data.span_hours, 8.0);  // the run's end
  EXPECT_EQ(data.gpus, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
}

TEST_F(ReportDataTest, BestKernelAndSpeedOfLightPerTask) {
  ReportData data = load(night_.night_run);
  const TaskSummary& softmax = task(data, "softmax");
  ASSERT_TRUE(softmax.best.has_value());
  EXPECT_DOUBLE_EQ(softmax.best->median_us, 400);
  EXPECT_DOUBLE_EQ(softmax.best->speedup, 2.5);
  EXPECT_EQ(softmax.best_origin, "gpt-test");
  EXPECT_DOUBLE_EQ(softmax.baseline_us, 1000);
  EXPECT_NEAR(softmax.best->sol_percent, 75, 1e-9);
  EXPECT_NEAR(softmax.baseline_sol_percent, 30, 1e-9);  // sol 300 us over the 1000 us baseline

  const TaskSummary& gemm = task(data, "bf16_gemm");
  ASSERT_TRUE(gemm.best.has_value());
  EXPECT_DOUBLE_EQ(gemm.best->speedup, 1.0);
  EXPECT_EQ(gemm.best_origin, "baseline");
  EXPECT_NEAR(geomean_best_speedup(data), std::cbrt(2.5 * 1.8 * 1.0), 1e-9);
}

TEST_F(ReportDataTest, VerdictsCountEveryCandidateWithTheCommonestReason) {
  ReportData data = load(night_.night_run);
  const TaskSummary& softmax = task(data, "softmax");
  // Candidates as kopt status and the daemon count them: the baseline's own evaluation is not
  // one (memory_store/task_counts.h); the verdict chart counts every evaluation.
  EXPECT_EQ(softmax.candidates, 7);
  EXPECT_EQ(softmax.verdicts.at(Verdict::kOk), 4);
  EXPECT_EQ(softmax.verdicts.at(Verdict::kIncorrect), 2);
  EXPECT_EQ(softmax.verdicts.at(Verdict::kCompileError), 1);
  EXPECT_EQ(softmax.verdicts.at(Verdict::kTimeout), 1);
  EXPECT_EQ(softmax.example_failure.at(Verdict::kIncorrect), "out[3] = 0.5, expected 0.25");
  EXPECT_EQ(softmax.example_failure.count(Verdict::kOk), 0u);
  std::vector<std::string> expected = {
      "ok", "compile_error", "crash", "incorrect", "out_of_bounds", "suspicious", "timeout"};
  std::vector<std::string> order;
  for (Verdict v : data.verdict_order) order.push_back(verdict_name(v));
  EXPECT_EQ(order, expected);
}

TEST_F(ReportDataTest, BestSpeedupOverTimeIsARunningBestFromOneX) {
  ReportData data = load(night_.night_run);
  const auto& series = task(data, "softmax").best_speedup;
  // Start at 1x, the tuner at 00:30 (1.4x), the LLM kernel at 02:00 (2.5x); the slower kernel
  // at 02:40 changes nothing; the line runs to the end of the run.
  std::vector<TimePoint> expected = {{0, 1}, {0.5, 1000.0 / 714}, {2, 2.5}, {8, 2.5}};
  ASSERT_EQ(series.size(), expected.size());
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_NEAR(series[i].first, expected[i].first, 1e-9) << i;
    EXPECT_NEAR(series[i].second, expected[i].second, 1e-9) << i;
  }
}

TEST_F(ReportDataTest, LlmTokensAndCostAccumulateOverTime) {
  ReportData data = load(night_.night_run);
  EXPECT_EQ(data.llm_totals.calls, 5);
  EXPECT_EQ(data.llm_totals.failed_calls, 1);
  EXPECT_EQ(data.llm_totals.input_tokens, 66000);
  EXPECT_EQ(data.llm_totals.output_tokens, 7500);
  EXPECT_NEAR(data.llm_totals.cost_usd, 0.85, 1e-9);
  ASSERT_EQ(data.cost_usd.size(), 6u);  // a zero at the start, then one point per call
  EXPECT_EQ(data.cost_usd.front(), TimePoint(0, 0));
  EXPECT_NEAR(data.cost_usd.back().first, 5 + 10.0 / 60, 1e-9);
  EXPECT_NEAR(data.cost_usd.back().second, 0.85, 1e-9);
  for (size_t i = 1; i < data.prompt_tokens.size(); ++i)
    EXPECT_GE(data.prompt_tokens[i].second, data.prompt_tokens[i - 1].second);
  ASSERT_EQ(data.llm_by_model.size(), 2u);
  EXPECT_EQ(data.llm_by_model[0].first, "claude-test");
  EXPECT_EQ(data.llm_by_model[0].second.calls, 2);
}

TEST_F(ReportDataTest, WinsAreThisRunsPositivePairsBestFirstWithDiffs) {
  ReportData data = load(night_.night_run);
  ASSERT_EQ(data.wins.size(), 3u);
  EXPECT_EQ(data.wins[0].pair.id, night_.rmsnorm_pair);
  EXPECT_EQ(data.wins[1].pair.id, night_.softmax_llm_pair);
  EXPECT_EQ(data.wins[2].pair.id, night_.softmax_tuner_pair);
  const Win& win = data.wins[1];
  EXPECT_NE(win.diff.find("-  // two passes, BLOCK 512"), std::string::npos) << win.diff;
  EXPECT_NE(win.diff.find("+  // online max and sum"), std::string::npos) << win.diff;
  EXPECT_NE(win.diff.find("+  // warp shuffles"), std::string::npos) << win.diff;
}

TEST_F(ReportDataTest, AllRunsIncludeTheEarlierNight) {
  ReportData data = load(std::nullopt);
  EXPECT_FALSE(data.run.has_value());
  EXPECT_EQ(data.tasks.size(), 4u);
  EXPECT_EQ(data.tasks[0].task, "axpy");
  EXPECT_EQ(data.start, "2026-11-21T00:30:00Z");  // the earliest event
  EXPECT_EQ(data.wins.size(), 4u);
  EXPECT_EQ(data.llm_totals.calls, 6);
}

TEST_F(ReportDataTest, AnUnknownRunIsAnError) {
  ReportScope scope;
  scope.run_id = 99;
  auto data = load_report_data(*store_, "memory.db", scope);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.error().find("no run 99"), std::string::npos) << data.error();
}

TEST(ReportMarkup, ParsesUtcTimesWithoutTheLocalZone) {
  EXPECT_DOUBLE_EQ(parse_utc_seconds("1970-01-01T00:00:00Z"), 0);
  EXPECT_DOUBLE_EQ(parse_utc_seconds("2026-11-22T03:14:07Z"), 1795317247);
  EXPECT_DOUBLE_EQ(
      parse_utc_seconds("2000-03-01T00:00:00Z") - parse_utc_seconds("2000-02-28T00:00:00Z"),
      2 * 86400);  // 2000 is a leap year
  EXPECT_LT(parse_utc_seconds("yesterday"), 0);
}

TEST(ReportMarkup, EscapesAndFormats) {
  EXPECT_EQ(html_text("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(markdown_text("a|b\nc"), "a\\|b c");
  EXPECT_EQ(format_micros(812.34), "812.3 us");
  EXPECT_EQ(format_micros(1250), "1.25 ms");
  EXPECT_EQ(format_micros(0), "-");
  EXPECT_EQ(format_speedup(2.3141), "2.31x");
  EXPECT_EQ(first_line("\n  error: x\nmore", 80), "error: x");
  EXPECT_EQ(first_line("abcdef", 3), "abc...");
}

// Tokens per unit of S gained (issue 36): a baseline at 100 us with a 50 us bound is S 0.5
// against itself; a best at 60 us is S (100-50)/((60-50)+(100-50)) = 0.833, so 1/3 of S gained,
// and 3000 tokens bought it: 9000 per unit of S.
TEST(TokensPerSGained, CountsPromptAndCompletionTokensOverTheSGained) {
  ReportData data;
  TaskSummary task;
  task.best.emplace();
  task.best->median_us = 60;
  task.baseline_us = 100;
  task.baseline_sol_percent = 50;
  task.standing = standing(60, 100, 50, std::nullopt);
  ASSERT_TRUE(task.standing.score.has_value()) << task.standing.score_note;
  EXPECT_NEAR(sol_score_gained(task), 1.0 / 3, 1e-9);
  data.tasks.push_back(task);
  data.llm_totals.input_tokens = 2500;
  data.llm_totals.output_tokens = 500;
  ASSERT_TRUE(tokens_per_sol_score_gained(data).has_value());
  EXPECT_NEAR(*tokens_per_sol_score_gained(data), 9000, 1e-6);
  // Against a production baseline at 80 us: S from 0.375 (the baseline) to 0.75 (the best).
  data.tasks[0].standing = standing(60, 100, 50, ProductionReference{"cublaslt", 80});
  EXPECT_NEAR(sol_score_gained(data.tasks[0]), 30.0 / 40 - 30.0 / 80, 1e-9);
  // Nothing gained: no number rather than infinity.
  data.tasks[0].best->median_us = 100;
  data.tasks[0].standing = standing(100, 100, 50, std::nullopt);
  EXPECT_FALSE(tokens_per_sol_score_gained(data).has_value());
}

}  // namespace
}  // namespace kopt::report
