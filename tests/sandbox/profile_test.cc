// The profile pass's pure parts, on CI: its metric list (kept in step with the ncu comparison
// script), the summary of a plan's kernels, the one-line description prompts carry, and the
// protocol fields that bring a profile from the worker.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandbox/profile_metrics.h"
#include "sandbox/protocol.h"

namespace kopt {
namespace {

using nlohmann::json;

// One kernel's values: every metric 0, then the named ones set.
RangeValues range(std::map<std::string, double> set) {
  const auto& names = profile_metric_names();
  RangeValues v(names.size(), 0.0);
  for (size_t i = 0; i < names.size(); ++i)
    if (set.count(names[i])) v[i] = set[names[i]];
  return v;
}

TEST(ProfileMetrics, SummaryWeighsRatesByDurationAndSumsCounts) {
  auto a = range({{"gpu__time_duration.sum", 3000},  // 3 us
                  {"dram__bytes_read.sum", 1e6},
                  {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 90},
                  {"sm__warps_active.avg.pct_of_peak_sustained_active", 50},
                  {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 320},
                  {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 310},
                  {"smsp__warps_issue_stalled_long_scoreboard.sum", 60},
                  {"smsp__warps_issue_stalled_selected.sum", 20}});
  auto b = range({{"gpu__time_duration.sum", 1000},
                  {"dram__bytes_write.sum", 5e5},
                  {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 10},
                  {"sm__warps_active.avg.pct_of_peak_sustained_active", 100},
                  {"smsp__warps_issue_stalled_barrier.sum", 20}});
  KernelProfile p = summarize_ranges({a, b});
  EXPECT_EQ(p.kernels, 2);
  EXPECT_DOUBLE_EQ(p.duration_us, 4.0);
  EXPECT_DOUBLE_EQ(p.dram_bytes(), 1.5e6);
  EXPECT_DOUBLE_EQ(p.dram_percent, 70.0);  // (3 * 90 + 1 * 10) / 4
  EXPECT_DOUBLE_EQ(p.occupancy_percent, 62.5);
  EXPECT_NEAR(p.bank_conflict_percent(), 96.875, 1e-9);
  EXPECT_EQ(p.tensor_percent, -1);  // no tensor instruction: not a measured zero
  ASSERT_EQ(p.stalls.size(), 3u);
  EXPECT_EQ(p.stalls[0].reason, "long_scoreboard");
  EXPECT_DOUBLE_EQ(p.stalls[0].percent, 60.0);
  // "selected" is issuing, not a stall: left out of the top list, kept in the shares.
  auto top = p.top_stalls(2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[1].reason, "barrier");
}

TEST(ProfileMetrics, TensorPipesCountOnlyWithMatrixInstructions) {
  const std::string busy =
      "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg."
      "pct_of_peak_sustained_active";
  // A kernel with wgmma instructions: its tensor-pipe share is a measurement.
  KernelProfile wgmma =
      summarize_ranges({range({{"gpu__time_duration.sum", 1000},
                               {busy, 71},
                               {"sm__inst_executed_pipe_tensor_op_gmma.sum", 8}})});
  EXPECT_DOUBLE_EQ(wgmma.tensor_percent, 71);
  // Pipe cycles without any matrix instruction (other work on the pipe): not tensor work.
  KernelProfile none = summarize_ranges({range({{"gpu__time_duration.sum", 1000}, {busy, 0.6}})});
  EXPECT_EQ(none.tensor_percent, -1);
}

TEST(ProfileMetrics, DescriptionNamesWhereTheTimeGoes) {
  KernelProfile p;
  p.kernels = 1;
  p.dram_read_bytes = 500e6;
  p.dram_percent = 61.2;
  p.l2_hit_percent = 12;
  p.sm_percent = 18;
  p.occupancy_percent = 50;
  p.stalls = {{"long_scoreboard", 48}, {"selected", 20}, {"mio_throttle", 10}};
  p.shared_wavefronts = 100;
  p.bank_conflicts = 31;
  std::string line = describe_profile(p);
  for (const char* needed :
       {"DRAM 61% of peak (500 MB)", "L2 hit 12%", "achieved occupancy 50%",
        "top stalls: long scoreboard 48%, mio throttle 10%", "bank conflicts 31% of wavefronts"})
    EXPECT_NE(line.find(needed), std::string::npos) << needed << " in " << line;
  EXPECT_EQ(line.find("selected"), std::string::npos);
  EXPECT_EQ(line.find("tensor"), std::string::npos);
}

TEST(ProfileMetrics, TheNcuComparisonAsksForTheSameMetrics) {
  std::ifstream file(std::filesystem::path(KOPT_SOURCE_DIR) / "bench" / "profile_fidelity.py");
  std::stringstream text;
  text << file.rdbuf();
  ASSERT_FALSE(text.str().empty());
  for (const auto& name : profile_metric_names()) {
    std::string base = name;
    if (base.rfind("smsp__warps_issue_stalled_", 0) == 0) {
      base = base.substr(26, base.size() - 26 - 4);  // the reason, listed in STALLS
      EXPECT_NE(text.str().find("\"" + base + "\""), std::string::npos) << name;
    } else {
      EXPECT_NE(text.str().find("\"" + name + "\""), std::string::npos) << name;
    }
  }
}

TEST(ProfileProtocol, ProfileAndOptionsRoundTrip) {
  EvalRequest request;
  request.task_json = "{}";
  request.options.profile = "cupti";
  request.options.profile_below_us = 123.5;
  auto back = eval_request_from_json(to_json(request));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->options.profile, "cupti");
  EXPECT_EQ(back->options.profile_below_us, 123.5);

  EvalResult result;
  result.verdict = Verdict::kOk;
  KernelProfile p;
  p.kernels = 2;
  p.dram_percent = 88;
  p.tensor_percent = -1;
  p.stalls = {{"long_scoreboard", 70.5}};
  p.passes = 15;
  result.profile = p;
  result.profile_note = "";
  auto again = eval_result_from_json(to_json(result));
  ASSERT_TRUE(again) << again.error();
  ASSERT_TRUE(again->profile);
  EXPECT_EQ(to_json(*again->profile), to_json(p));
  EXPECT_EQ(kProtocolVersion, 2);
}

TEST(ProfileProtocol, BadProfilesAndModesNameTheirPath) {
  json bad_mode = {{"task_json", "{}"},
                   {"reference", {{"source", "r"}}},
                   {"candidate", {{"source", "c"}}},
                   {"options", {{"profile", "nsight"}}}};
  auto request = eval_request_from_json(bad_mode);
  ASSERT_FALSE(request);
  EXPECT_NE(request.error().find("$.options.profile"), std::string::npos) << request.error();

  EvalResult result;
  result.profile = KernelProfile{};
  json j = to_json(result);
  j["profile"]["stalls"] = json::array({{{"reason", "wait"}, {"percent", "lots"}}});
  auto parsed = eval_result_from_json(j);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().find("$.profile.stalls[0].percent"), std::string::npos)
      << parsed.error();
  j["profile"] = {{"dram_percent", 1}};  // most fields missing
  EXPECT_FALSE(eval_result_from_json(j));
}

}  // namespace
}  // namespace kopt
