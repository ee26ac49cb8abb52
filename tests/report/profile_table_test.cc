// The reports' "Where the time goes" table: each task's baseline and best kernel with the hardware
// counters of their profile passes, in HTML and markdown, and no table at all where the memory
// holds no profile.
#include <gtest/gtest.h>

#include "sandbox/kernel_profile.h"
#include "src/report/html_report.h"
#include "src/report/markdown_report.h"
#include "src/report/report_data.h"
#include "tests/report/report_fixture.h"

namespace kopt::report {
namespace {

using memory::testing::TempDir;
using testing::count_of;

constexpr const char* kTableTitle = "Where the time goes";

// A profile of one 210 us or 75 us transpose launch moving 134 MB, with the table's counters.
std::string profile(double duration_us, double dram, double l2_hit, double sm, double occupancy,
                    double shared_wavefronts, double bank_conflicts,
                    std::vector<StallShare> stalls) {
  KernelProfile p;
  p.kernels = 1;
  p.duration_us = duration_us;
  p.dram_read_bytes = p.dram_write_bytes = 67e6;
  p.dram_percent = dram;
  p.l2_hit_percent = l2_hit;
  p.sm_percent = sm;
  p.occupancy_percent = occupancy;
  p.shared_wavefronts = shared_wavefronts;
  p.bank_conflicts = bank_conflicts;
  p.stalls = std::move(stalls);
  p.passes = 15;
  return to_json(p).dump();
}

// A naive transpose: uncoalesced, a third of the DRAM peak, warps mostly waiting on global
// loads. "selected" is issuing, not a stall: the table's top stall must skip it.
std::string baseline_profile() {
  return profile(210, 31.24, 12.5, 18.0, 47.3, 0, 0,
                 {{"selected", 60}, {"long_scoreboard", 48.4}, {"lg_throttle", 9}});
}

// The tiled version: near the DRAM peak, with shared-memory bank conflicts left in (25%).
std::string best_profile() {
  return profile(75, 88.4, 40, 30.5, 90.1, 1000, 250, {{"mio_throttle", 22.2}, {"selected", 20}});
}

class ProfileTableTest : public ::testing::Test {
 protected:
  void SetUp() override { store_.emplace(memory::testing::open_store(dir_ / "memory.db")); }

  int64_t kernel(const std::string& task, const std::string& words, const std::string& agent) {
    memory::KernelRecord k;
    k.task = task;
    k.source = memory::testing::kernel_source(task, words);
    k.origin.agent = parse_origin(agent).value();
    auto id = store_->add_kernel(k);
    EXPECT_TRUE(id.ok()) << id.error();
    return id.ok() ? *id : 0;
  }

  void evaluate(int64_t kernel_id, const std::string& task, double median_us, double baseline_us,
                const std::string& profile_json) {
    memory::EvaluationRecord e;
    e.kernel_id = kernel_id;
    e.task = task;
    e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
    e.verdict = Verdict::kOk;
    e.median_us = median_us;
    e.baseline_us = baseline_us;
    e.speedup = baseline_us / median_us;
    e.profile_json = profile_json;
    auto id = store_->add_evaluation(e);
    EXPECT_TRUE(id.ok()) << id.error();
  }

  // transpose: baseline and best profiled; axpy: verified, never profiled.
  void fill(bool with_profiles) {
    memory::testing::add_task(*store_, "transpose", {"memory-bound"});
    memory::testing::add_task(*store_, "axpy", {"memory-bound"});
    int64_t base = kernel("transpose", "naive", "baseline");
    int64_t tiled = kernel("transpose", "tiled shared", "coder");
    int64_t axpy = kernel("axpy", "scalar", "baseline");
    evaluate(base, "transpose", 210, 210, with_profiles ? baseline_profile() : "{}");
    evaluate(tiled, "transpose", 75, 210, with_profiles ? best_profile() : "{}");
    evaluate(axpy, "axpy", 30, 30, "{}");
  }

  ReportData load() {
    auto data = load_report_data(*store_, "memory.db", ReportScope{});
    EXPECT_TRUE(data.ok()) << data.error();
    return data.ok() ? std::move(*data) : ReportData{};
  }

  TempDir dir_;
  std::optional<memory::MemoryStore> store_;
};

TEST_F(ProfileTableTest, MarkdownShowsBaselineAndBestRowsWithTheirCounters) {
  fill(true);
  std::string md = render_markdown(load());
  size_t table = md.find("### Where the time goes");
  ASSERT_NE(table, std::string::npos) << md;
  EXPECT_NE(md.find("| task | kernel | DRAM % of peak | L2 hit | SM throughput | occupancy | top "
                    "stall | bank conflicts |\n| --- | --- | ---: | ---: | ---: | ---: | --- | "
                    "---: |\n",
                    table),
            std::string::npos)
      << md;
  size_t base = md.find(
      "| transpose | baseline | 31.2% | 12.5% | 18.0% | 47.3% | long scoreboard 48% | 0.0% |\n",
      table);
  size_t best = md.find(
      "| transpose | best | 88.4% | 40.0% | 30.5% | 90.1% | mio throttle 22% | 25.0% |\n", table);
  ASSERT_NE(base, std::string::npos) << md;
  ASSERT_NE(best, std::string::npos) << md;
  EXPECT_LT(base, best);  // the baseline first, the best beside it
  EXPECT_EQ(md.find("| axpy | baseline |", table), std::string::npos) << md;  // never profiled
  EXPECT_EQ(count_of(md, kTableTitle), 1u);
}

TEST_F(ProfileTableTest, HtmlShowsBaselineAndBestRowsWithTheirCounters) {
  fill(true);
  std::string html = render_html(load());
  size_t start = html.find("<table id=\"profiles\">");
  ASSERT_NE(start, std::string::npos) << html;
  std::string table = html.substr(start, html.find("</table>", start) - start);
  EXPECT_EQ(count_of(table, "<tr>"), 3u) << table;  // the header, the baseline, the best
  EXPECT_NE(table.find("<th class=\"n\">DRAM % of peak</th>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><td>transpose</td><td>baseline</td><td class=\"n\">31.2%</td>"
                       "<td class=\"n\">12.5%</td><td class=\"n\">18.0%</td>"
                       "<td class=\"n\">47.3%</td><td class=\"n\">long scoreboard 48%</td>"
                       "<td class=\"n\">0.0%</td></tr>"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("<tr><td>transpose</td><td>best</td><td class=\"n\">88.4%</td>"
                       "<td class=\"n\">40.0%</td><td class=\"n\">30.5%</td>"
                       "<td class=\"n\">90.1%</td><td class=\"n\">mio throttle 22%</td>"
                       "<td class=\"n\">25.0%</td></tr>"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("axpy"), std::string::npos) << table;
  EXPECT_EQ(count_of(html, kTableTitle), 1u);
}

TEST_F(ProfileTableTest, NoTableWhenNoProfileIsStored) {
  fill(false);
  ReportData data = load();
  ASSERT_EQ(data.tasks.size(), 2u);  // both tasks are in the report, only their counters are not
  std::string md = render_markdown(data);
  std::string html = render_html(data);
  EXPECT_EQ(md.find(kTableTitle), std::string::npos) << md;
  EXPECT_EQ(html.find(kTableTitle), std::string::npos);
  EXPECT_EQ(html.find("id=\"profiles\""), std::string::npos);
}

TEST_F(ProfileTableTest, AProfileThatDoesNotParseGivesNoRow) {
  EXPECT_TRUE(profile_cells("{}").empty());
  EXPECT_TRUE(profile_cells("not json").empty());
  EXPECT_TRUE(profile_cells("{\"dram_percent\": \"high\"}").empty());
  EXPECT_EQ(profile_cells(best_profile()).size(), profile_headers().size());
}

}  // namespace
}  // namespace kopt::report
