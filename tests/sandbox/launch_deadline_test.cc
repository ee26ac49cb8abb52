// How long a candidate's run may take before it is a timeout (sandbox/worker/launch_deadline.h):
// the factor of the trusted kernel's time, the floor, and the ceiling a run under a tool gets.
// No GPU.
#include "sandbox/worker/launch_deadline.h"

#include <gtest/gtest.h>

namespace kopt::worker {
namespace {

TEST(CandidateRunLimit, FactorFloorAndCeiling) {
  EvalOptions options;
  options.hang_factor = 2000;
  options.hang_floor_seconds = 30;
  // 2000 x 75 ms: 150 s, past a tool's 120 s wall limit without a ceiling.
  RunLimit open = candidate_run_limit(options, 0.075, "the reference");
  EXPECT_DOUBLE_EQ(open.seconds, 150);
  EXPECT_EQ(open.basis.find("at most"), std::string::npos) << open.basis;
  options.hang_ceiling_seconds = 80;
  RunLimit capped = candidate_run_limit(options, 0.075, "the reference");
  EXPECT_DOUBLE_EQ(capped.seconds, 80);
  EXPECT_NE(capped.basis.find("80.0 s: 2000x the reference's 75 ms"), std::string::npos)
      << capped.basis;
  EXPECT_NE(capped.basis.find("at most 80.0 s"), std::string::npos) << capped.basis;
  // Below the ceiling the floor still holds.
  RunLimit floor = candidate_run_limit(options, 0.001, "the reference");
  EXPECT_DOUBLE_EQ(floor.seconds, 30);
  EXPECT_EQ(floor.basis.find("at most"), std::string::npos) << floor.basis;
}

}  // namespace
}  // namespace kopt::worker
