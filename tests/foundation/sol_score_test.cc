// common/sol_score: S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)) and the standing every printer
// shows (speedup over baseline.cu, over the best production baseline, %SOL, S).
#include "common/sol_score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kopt {
namespace {

TEST(SolScore, AtTheBaselineIsOneHalf) {
  auto s = sol_score(100.0, 100.0, 20.0);
  ASSERT_TRUE(s) << s.error();
  EXPECT_DOUBLE_EQ(*s, 0.5);
}

TEST(SolScore, AtTheSpeedOfLightIsOne) {
  auto s = sol_score(20.0, 100.0, 20.0);
  ASSERT_TRUE(s) << s.error();
  EXPECT_DOUBLE_EQ(*s, 1.0);
}

TEST(SolScore, SlowerThanTheBaselineIsBelowOneHalf) {
  auto s = sol_score(180.0, 100.0, 20.0);  // 160 / 80: twice the baseline's distance to light
  ASSERT_TRUE(s) << s.error();
  EXPECT_DOUBLE_EQ(*s, 1.0 / 3.0);
  EXPECT_LT(*sol_score(100.01, 100.0, 20.0), 0.5);
}

TEST(SolScore, BetweenBaselineAndLightIsBetweenOneHalfAndOne) {
  auto s = sol_score(60.0, 100.0, 20.0);  // halfway in distance: 1 / 1.5
  ASSERT_TRUE(s) << s.error();
  EXPECT_DOUBLE_EQ(*s, 2.0 / 3.0);
}

TEST(SolScore, FasterThanLightIsRefusedAsSuspicious) {
  auto s = sol_score(19.9, 100.0, 20.0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("suspicious"), std::string::npos) << s.error();
}

TEST(SolScore, AReferenceAtOrBelowTheBoundHasNoScore) {
  auto at = sol_score(20.0, 20.0, 20.0);
  ASSERT_FALSE(at);
  EXPECT_NE(at.error().find("undefined"), std::string::npos) << at.error();
  EXPECT_FALSE(sol_score(30.0, 10.0, 20.0));  // the kernel is fine, the reference is not
}

TEST(SolScore, NonPositiveOrNonFiniteTimesAreErrors) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(sol_score(0.0, 100.0, 20.0));
  EXPECT_FALSE(sol_score(50.0, -1.0, 20.0));
  EXPECT_FALSE(sol_score(50.0, 100.0, 0.0));
  EXPECT_FALSE(sol_score(nan, 100.0, 20.0));
  EXPECT_FALSE(sol_score(50.0, std::numeric_limits<double>::infinity(), 20.0));
}

TEST(Standing, WithoutAProductionBaselineScoresAgainstBaselineCuAndSaysSo) {
  Standing s = standing(50.0, 100.0, 20.0, std::nullopt);
  EXPECT_DOUBLE_EQ(s.speedup_vs_baseline, 2.0);
  EXPECT_EQ(s.speedup_vs_production, 0.0);
  EXPECT_EQ(s.production_name, "");
  EXPECT_DOUBLE_EQ(s.sol_percent, 40.0);
  ASSERT_TRUE(s.score);
  EXPECT_DOUBLE_EQ(*s.score, 1.0 / (1.0 + 30.0 / 80.0));
  EXPECT_EQ(s.score_reference, "baseline.cu");
  EXPECT_EQ(format_production_speedup(s), "none measured");
  EXPECT_EQ(format_score(s), "S 0.73 vs baseline.cu (no production baseline measured)");
  // Not measured is null in JSON, never 0.0.
  EXPECT_TRUE(standing_json(s)["speedup_vs_production"].is_null());
  EXPECT_TRUE(standing_json(s)["production_baseline"].is_null());
}

TEST(Standing, WithAProductionBaselineScoresAgainstItAndNamesIt) {
  Standing s = standing(50.0, 100.0, 20.0, ProductionReference{"cublaslt_autotuned", 40.0});
  EXPECT_DOUBLE_EQ(s.speedup_vs_baseline, 2.0);
  EXPECT_DOUBLE_EQ(s.speedup_vs_production, 0.8);
  EXPECT_EQ(s.production_name, "cublaslt_autotuned");
  ASSERT_TRUE(s.score);
  EXPECT_DOUBLE_EQ(*s.score, 1.0 / (1.0 + 30.0 / 20.0));  // 0.4: slower than cuBLASLt
  EXPECT_EQ(s.score_reference, "cublaslt_autotuned");
  EXPECT_EQ(format_production_speedup(s), "0.80x cublaslt_autotuned");
  EXPECT_EQ(format_score(s), "S 0.40 vs cublaslt_autotuned");
}

// Libraries a task declares that did not import are said beside the baseline that stands in.
TEST(Standing, LibrariesNotInstalledAreSaidPlainly) {
  Standing s = standing(50.0, 100.0, 20.0, ProductionReference{"torch_compile", 40.0});
  s.not_installed = {"flashinfer", "vllm"};
  EXPECT_EQ(format_production_speedup(s),
            "0.80x torch_compile; flashinfer, vllm not installed (torch_compile stands in)");
  EXPECT_EQ(standing_json(s)["libraries_not_installed"], nlohmann::json({"flashinfer", "vllm"}));
  Standing none = standing(50.0, 100.0, 20.0, std::nullopt);
  none.not_installed = {"deepgemm"};
  EXPECT_EQ(format_production_speedup(none),
            "none measured; deepgemm not installed (nothing measured stands in)");
  EXPECT_FALSE(
      standing_json(standing(50.0, 100.0, 20.0, std::nullopt)).contains("libraries_not_installed"));
}

TEST(Standing, AKernelFasterThanLightKeepsItsSpeedupsButNoScore) {
  Standing s = standing(10.0, 100.0, 20.0, std::nullopt);
  EXPECT_DOUBLE_EQ(s.speedup_vs_baseline, 10.0);
  EXPECT_DOUBLE_EQ(s.sol_percent, 200.0);
  EXPECT_FALSE(s.score);
  EXPECT_NE(format_score(s).find("suspicious"), std::string::npos) << format_score(s);
}

TEST(Standing, JsonCarriesEveryField) {
  nlohmann::json with =
      standing_json(standing(50.0, 100.0, 20.0, ProductionReference{"torch_compile", 40.0}));
  EXPECT_DOUBLE_EQ(with["speedup_vs_baseline"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(with["speedup_vs_production"].get<double>(), 0.8);
  EXPECT_EQ(with["production_baseline"], "torch_compile");
  EXPECT_DOUBLE_EQ(with["sol_percent"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(with["sol_score"].get<double>(), 0.4);
  EXPECT_EQ(with["sol_score_reference"], "torch_compile");
  nlohmann::json without = standing_json(standing(10.0, 100.0, 20.0, std::nullopt));
  EXPECT_TRUE(without["production_baseline"].is_null());
  EXPECT_TRUE(without["sol_score"].is_null());
  EXPECT_NE(without["sol_score_note"].get<std::string>().find("suspicious"), std::string::npos);
}

TEST(Standing, NoBoundMeansNoScore) {
  Standing s = standing(10.0, 100.0, 0.0, std::nullopt);
  EXPECT_EQ(s.sol_percent, 0.0);
  EXPECT_FALSE(s.score);
  EXPECT_EQ(s.score_note, "no speed-of-light bound");
}

}  // namespace
}  // namespace kopt
