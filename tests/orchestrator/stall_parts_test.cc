// The parts of issue 13's stall handling, each alone: the kernel fingerprint that spots repeats
// and near-repeats, the stall detector's advice and its words, and the spend-rate window.
#include <gtest/gtest.h>

#include "src/orchestrator/kernel_fingerprint.h"
#include "src/orchestrator/spend_rate.h"
#include "src/orchestrator/stall_detector.h"

namespace kopt::orchestrator {
namespace {

const char* kKernel = R"~(// Online softmax: one pass.
/* kopt:plan
{"tunables": {"BLOCK": [256, 512]},
 "launches": [{"kernel": "softmax_online", "grid": ["rows"], "block": ["BLOCK"],
               "args": ["x", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void softmax_online(const float* x, float* out, int rows, int cols) {
  float best = -3.4e+38f;  // the running maximum
  for (int c = threadIdx.x; c < cols; c += BLOCK) best = fmaxf(best, x[c]);
  out[blockIdx.x] = expf(best);
}
)~";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

TEST(KernelFingerprint, SpacingCommentsAndNamesDoNotMakeANewKernel) {
  std::string fp = kernel_fingerprint(kKernel);
  EXPECT_EQ(kernel_fingerprint(std::string(kKernel) + "\n\n"), fp);
  EXPECT_EQ(kernel_fingerprint(replace_all(kKernel, "// the running maximum", "/* max so far */")),
            fp);
  EXPECT_EQ(kernel_fingerprint(replace_all(kKernel, "\n  ", "\n      ")), fp);
  // The kernel renamed in the code and in its launch plan alike, and a variable renamed.
  EXPECT_EQ(kernel_fingerprint(replace_all(replace_all(kKernel, "softmax_online", "softmax_v2"),
                                           "best", "running_max")),
            fp);
}

TEST(KernelFingerprint, CodeNumbersTypesBuiltinsAndThePlanMakeANewKernel) {
  std::string fp = kernel_fingerprint(kKernel);
  EXPECT_NE(kernel_fingerprint(replace_all(kKernel, "c += BLOCK", "c += 2 * BLOCK")), fp);
  EXPECT_NE(kernel_fingerprint(replace_all(kKernel, "[256, 512]", "[128, 512]")), fp);
  EXPECT_NE(kernel_fingerprint(replace_all(kKernel, "float best", "double best")), fp);
  EXPECT_NE(kernel_fingerprint(replace_all(kKernel, "threadIdx.x", "threadIdx.y")), fp);
  EXPECT_NE(kernel_fingerprint(replace_all(kKernel, "expf(best)", "logf(best)")), fp);
  EXPECT_NE(
      kernel_fingerprint(replace_all(kKernel, "\"grid\": [\"rows\"]", "\"grid\": [\"cols\"]")), fp);
  // Only the kopt:plan comment is kept among the comments.
  EXPECT_NE(normalized_kernel(kKernel).find("kopt:plan"), std::string::npos);
  EXPECT_EQ(normalized_kernel(kKernel).find("running"), std::string::npos);
}

StallSettings small_window() {
  StallSettings s;
  s.window = 10;
  s.min_calls = 4;
  s.min_new_share = 0.5;
  s.park_new_share = 0.1;
  s.park_dry_calls = 100;
  s.backoff_initial = std::chrono::milliseconds(100);
  s.backoff_max = std::chrono::milliseconds(300);
  return s;
}

TEST(StallDetector, AHealthyModelIsNeverAdvisedToBackOff) {
  StallDetector d(small_window());
  for (int i = 0; i < 100; ++i) {
    auto advice = d.record(i % 3 == 2 ? CallOutcome::kRepeat : CallOutcome::kNewKernel);
    EXPECT_EQ(advice, StallDetector::Advice::kGoOn) << i;
  }
}

TEST(StallDetector, AlternatingFailuresBackOffThenPark) {
  StallDetector d(small_window());
  std::vector<StallDetector::Advice> advice;
  const CallOutcome kinds[] = {CallOutcome::kRepeat, CallOutcome::kTruncated, CallOutcome::kRepeat,
                               CallOutcome::kRefused, CallOutcome::kToolCall};
  for (int i = 0; i < 10; ++i) advice.push_back(d.record(kinds[i % 5]));
  EXPECT_EQ(advice[2], StallDetector::Advice::kGoOn);     // too few calls to judge
  EXPECT_EQ(advice[3], StallDetector::Advice::kBackOff);  // 0 of 4 new
  EXPECT_EQ(advice[4], StallDetector::Advice::kGoOn);     // not again at once
  EXPECT_EQ(advice[5], StallDetector::Advice::kBackOff);
  EXPECT_EQ(d.next_delay(), std::chrono::milliseconds(300));  // doubled, up to the most
  EXPECT_EQ(advice[9], StallDetector::Advice::kPark);         // a full window, nothing new
  EXPECT_EQ(d.describe(),
            "0 new kernels in the last 10 coder answers (4 repeats, 2 tool calls, 2 refusals, "
            "2 cut at the token limit)");
}

TEST(StallDetector, SaysWhichFailureDominates) {
  StallDetector d(small_window());
  for (int i = 0; i < 10; ++i) {
    (void)d.record(i < 9 ? CallOutcome::kRepeat : CallOutcome::kNewKernel);
  }
  EXPECT_EQ(d.describe(), "9 of the last 10 coder answers were repeats");
}

TEST(StallDetector, ARunOfCallsWithoutANewKernelParksAndSaysWhatTheyWere) {
  StallSettings s = small_window();
  s.window = 20;
  s.park_dry_calls = 6;
  StallDetector d(s);
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(d.record(CallOutcome::kNewKernel), StallDetector::Advice::kGoOn);
  for (int i = 0; i < 5; ++i) (void)d.record(i % 2 ? CallOutcome::kRefused : CallOutcome::kRepeat);
  EXPECT_EQ(d.dry_calls(), 5);
  EXPECT_EQ(d.record(CallOutcome::kRepeat), StallDetector::Advice::kPark);
  EXPECT_EQ(d.describe(), "4 of the last 6 coder answers were repeats");
}

TEST(StallDetector, RecoveringResetsTheBackOff) {
  StallDetector d(small_window());
  for (int i = 0; i < 8; ++i) (void)d.record(CallOutcome::kEmpty);
  EXPECT_GT(d.backoffs(), 0);
  for (int i = 0; i < 8; ++i) (void)d.record(CallOutcome::kNewKernel);
  EXPECT_EQ(d.backoffs(), 0);
  EXPECT_EQ(d.next_delay(), std::chrono::milliseconds(100));
}

TEST(SpendRate, DollarsPerHourOverTheWindowOnly) {
  using namespace std::chrono_literals;
  SpendRate rate(10min);
  auto t0 = SpendRate::Clock::now();
  rate.add(t0, 1.0);
  rate.add(t0 + 1min, 0.5);
  EXPECT_NEAR(rate.usd_per_hour(t0 + 2min), 9.0, 1e-9);         // $1.50 in 10 minutes
  EXPECT_NEAR(rate.usd_per_hour(t0 + 10min + 30s), 3.0, 1e-9);  // the first dollar left
  EXPECT_NEAR(rate.usd_per_hour(t0 + 12min), 0.0, 1e-9);
}

}  // namespace
}  // namespace kopt::orchestrator
