// The HTML and markdown reports of a real memory: every chart with its series, the wins table
// with anchors into the embedded diffs, escaping, and nothing that reaches outside the file.
#include "src/report/html_report.h"

#include <gtest/gtest.h>

#include <regex>

#include "src/report/markdown_report.h"
#include "src/report/svg_chart.h"
#include "tests/report/report_fixture.h"

namespace kopt::report {
namespace {

using memory::testing::TempDir;
using testing::count_of;

// The text of the element that starts at the first occurrence of `open_tag_prefix` up to the
// matching `close_tag` (charts do not nest, so the first close is the match).
std::string element(const std::string& html, const std::string& open_tag_prefix,
                    const std::string& close_tag) {
  size_t start = html.find(open_tag_prefix);
  if (start == std::string::npos) return "";
  size_t end = html.find(close_tag, start);
  return end == std::string::npos ? "" : html.substr(start, end + close_tag.size() - start);
}

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(memory::testing::open_store(dir_ / "memory.db"));
    night_ = testing::build_night_memory(*store_);
    ReportScope scope;
    scope.run_id = night_.night_run;
    auto data = load_report_data(*store_, "memory.db", scope);
    ASSERT_TRUE(data.ok()) << data.error();
    data_ = std::move(*data);
    html_ = render_html(data_);
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
  testing::NightMemory night_;
  ReportData data_;
  std::string html_;
};

TEST_F(HtmlReportTest, SpeedupChartPerTaskWithItsSeries) {
  for (const char* task : {"softmax", "rmsnorm", "bf16_gemm"}) {
    std::string svg = element(html_, std::string("<svg id=\"speedup-") + task + "\"", "</svg>");
    ASSERT_FALSE(svg.empty()) << task;
    EXPECT_NE(svg.find("data-chart=\"speedup\""), std::string::npos);
    EXPECT_NE(svg.find(std::string("data-series=\"") + task + "\""), std::string::npos);
    EXPECT_NE(svg.find("<path d=\"M"), std::string::npos) << svg;
  }
  std::string softmax = element(html_, "<svg id=\"speedup-softmax\"", "</svg>");
  EXPECT_EQ(count_of(softmax, "<circle"), 4u);          // start, tuner, LLM kernel, end of the run
  EXPECT_NE(softmax.find("2.50x"), std::string::npos);  // the title carries the final best
  EXPECT_EQ(html_.find("id=\"speedup-axpy\""), std::string::npos);  // another run's task
}

TEST_F(HtmlReportTest, SpeedOfLightChartHasBaselineAndBestPerTask) {
  std::string svg = element(html_, "<svg id=\"sol\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  EXPECT_NE(svg.find("data-series=\"baseline\""), std::string::npos);
  EXPECT_NE(svg.find("data-series=\"best\""), std::string::npos);
  EXPECT_EQ(count_of(svg, "<rect x="), 3u * 2 + 2);  // two bars per task + two legend swatches
  EXPECT_NE(svg.find("<title>softmax best: 75</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>softmax baseline: 30</title>"), std::string::npos) << svg;
}

TEST_F(HtmlReportTest, VerdictChartStacksEveryVerdict) {
  std::string svg = element(html_, "<svg id=\"verdicts\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  for (Verdict v : data_.verdict_order) {
    std::string verdict = verdict_name(v);
    EXPECT_NE(svg.find("data-series=\"" + verdict + "\""), std::string::npos) << verdict;
  }
  EXPECT_NE(svg.find("<title>softmax incorrect: 2</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>bf16_gemm crash: 1</title>"), std::string::npos) << svg;
  std::string failures = element(html_, "<table id=\"failures\"", "</table>");
  EXPECT_NE(failures.find("identifier &quot;INFINITY&quot; is undefined"), std::string::npos);
  EXPECT_NE(failures.find("a write landed in the guard zone"), std::string::npos);
}

TEST_F(HtmlReportTest, LlmChartsShowTokensAndCost) {
  std::string tokens = element(html_, "<svg id=\"llm-tokens\"", "</svg>");
  ASSERT_FALSE(tokens.empty());
  EXPECT_NE(tokens.find("data-series=\"prompt\""), std::string::npos);
  EXPECT_NE(tokens.find("data-series=\"completion\""), std::string::npos);
  std::string cost = element(html_, "<svg id=\"llm-cost\"", "</svg>");
  ASSERT_FALSE(cost.empty());
  EXPECT_NE(cost.find("data-series=\"cost\""), std::string::npos);
  EXPECT_NE(cost.find("cost: 0.85 at"), std::string::npos) << cost;
  EXPECT_NE(html_.find("$0.85"), std::string::npos);
}

TEST_F(HtmlReportTest, WinsLinkToEmbeddedDiffs) {
  std::string table = element(html_, "<table id=\"wins-table\"", "</table>");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(count_of(table, "<tr>"), 4u);  // header + three wins
  for (int64_t id : {night_.rmsnorm_pair, night_.softmax_llm_pair, night_.softmax_tuner_pair}) {
    std::string anchor = "diff-" + std::to_string(id);
    EXPECT_NE(table.find("href=\"#" + anchor + "\""), std::string::npos) << anchor;
    EXPECT_EQ(count_of(html_, "id=\"" + anchor + "\""), 1u) << anchor;
  }
  EXPECT_EQ(html_.find("diff-" + std::to_string(night_.negative_pair) + "\""), std::string::npos);
  EXPECT_EQ(html_.find("diff-" + std::to_string(night_.axpy_pair) + "\""), std::string::npos);
  EXPECT_NE(html_.find("<span class=\"add\">+  // online max and sum</span>"), std::string::npos);
  EXPECT_NE(html_.find("<span class=\"del\">-  // two passes, BLOCK 512</span>"),
            std::string::npos);
  // The summary's markup is text, not markup.
  EXPECT_NE(table.find("online max and sum &lt;fused&gt; with warp shuffles"), std::string::npos);
  EXPECT_EQ(html_.find("<fused>"), std::string::npos);
}

TEST_F(HtmlReportTest, NothingReachesOutsideTheFile) {
  EXPECT_EQ(html_.find("http://"), std::string::npos);
  EXPECT_EQ(html_.find("https://"), std::string::npos);
  EXPECT_EQ(html_.find("<script"), std::string::npos);
  EXPECT_EQ(html_.find("src="), std::string::npos);
  EXPECT_EQ(html_.find("url("), std::string::npos);
  EXPECT_EQ(html_.find("@import"), std::string::npos);
  std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html_.begin(), html_.end(), href);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1].str().substr(0, 1), "#") << (*it)[1].str();
  }
  EXPECT_EQ(html_.substr(0, 15), "<!DOCTYPE html>");
  EXPECT_EQ(count_of(html_, "<svg"), count_of(html_, "</svg>"));
}

TEST_F(HtmlReportTest, AnEmptyMemorySaysSoInsteadOfDrawing) {
  TempDir empty_dir;
  auto empty = memory::testing::open_store(empty_dir / "memory.db");
  auto data = load_report_data(empty, "memory.db", {});
  ASSERT_TRUE(data.ok()) << data.error();
  std::string html = render_html(*data);
  EXPECT_EQ(count_of(html, "<svg"), 0u);
  EXPECT_NE(html.find("No verified candidate yet."), std::string::npos);
  EXPECT_NE(html.find("No LLM calls."), std::string::npos);
  EXPECT_NE(html.find("No win recorded."), std::string::npos);
}

TEST_F(HtmlReportTest, MarkdownSummaryForAPullRequest) {
  std::string md = render_markdown(data_);
  EXPECT_NE(md.find("## kopt report"), std::string::npos);
  EXPECT_NE(md.find("run " + std::to_string(night_.night_run) + " (finished)"), std::string::npos);
  // Candidates as status counts them (memory_store/task_counts.h): the baselines' own three
  // evaluations are not candidates.
  EXPECT_NE(md.find("**11** candidates judged on **3** tasks, 4 verified"), std::string::npos)
      << md;
  // No production baseline in this memory: S is against baseline.cu (400 us of 1 ms, bound 300).
  EXPECT_NE(md.find("| softmax | 7 | 3 | 1.00 ms | 400.0 us | 2.50x | none measured | 30.0% -> "
                    "75.0% | S 0.88 vs baseline.cu \\(no production baseline measured\\) | "
                    "gpt-test | compile\\_error 1, incorrect 2, timeout 1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| rmsnorm | 1.80x | kernel"), std::string::npos) << md;
  EXPECT_EQ(count_of(md, "<details>"), 3u);
  EXPECT_EQ(count_of(md, "```diff\n"), 3u);
  EXPECT_NE(md.find("+  // bf16x2 vector loads\n"), std::string::npos);
  EXPECT_NE(md.find("**$0.85**"), std::string::npos);
}

TEST(SvgChart, NiceTicksCoverTheRangeWithRoundSteps) {
  auto unit = nice_ticks(0, 1, 5);
  ASSERT_EQ(unit.size(), 6u);
  for (size_t i = 0; i < unit.size(); ++i) EXPECT_NEAR(unit[i], 0.2 * double(i), 1e-12);
  auto ticks = nice_ticks(0, 73, 5);
  EXPECT_EQ(ticks.front(), 0);
  EXPECT_EQ(ticks.back(), 80);
  EXPECT_EQ(ticks[1], 20);
  EXPECT_EQ(short_number(1500), "1500");
  EXPECT_EQ(short_number(66000), "66k");
  EXPECT_EQ(short_number(2.5e6), "2.5M");
  EXPECT_EQ(short_number(0.85), "0.85");
}

TEST(SvgChart, StepSeriesDrawHorizontalThenVertical) {
  LineChart chart;
  chart.id = "c";
  chart.kind = "k";
  chart.series.push_back({"s", "#000", {{0, 1}, {1, 2}}, true});
  std::string svg = render_line_chart(chart);
  EXPECT_NE(svg.find(" H"), std::string::npos) << svg;
  EXPECT_NE(svg.find(" V"), std::string::npos) << svg;
  chart.series[0].step = false;
  svg = render_line_chart(chart);
  EXPECT_EQ(svg.find(" H"), std::string::npos) << svg;
  EXPECT_NE(svg.find(" L"), std::string::npos) << svg;
}

}  // namespace
}  // namespace kopt::report
