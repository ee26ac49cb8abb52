// What the worker reuses across evaluations to judge faster without judging less
// (sandbox/worker/baseline_history.h, verification_rounds in sandbox/worker/evaluation.h): the
// baseline's samples and when fresh ones agree with them, and how many verification rounds each
// shape of a task gets. Pure bookkeeping and arithmetic: no GPU.
#include <gtest/gtest.h>

#include <stdexcept>

#include "sandbox/task_spec.h"
#include "sandbox/worker/baseline_history.h"
#include "sandbox/worker/evaluation.h"

namespace kopt::worker {
namespace {

using Clock = BaselineHistory::Clock;

std::vector<TimingSample> samples(std::initializer_list<double> us, double mhz = 1980) {
  std::vector<TimingSample> out;
  for (double u : us) out.push_back({u, mhz});
  return out;
}

TEST(BaselineHistory, KeepsSamplesPerKeyAndForgetsOldOnes) {
  BaselineHistory history(std::chrono::seconds(300), 40);
  auto t0 = Clock::now();
  history.add("sgemm|m=8192", samples({43000, 43100}), 0.044, t0);
  history.add("axpy|n=1", samples({5}), 0.001, t0);
  EXPECT_EQ(history.recent("sgemm|m=8192", t0).size(), 2u);
  EXPECT_EQ(history.recent("axpy|n=1", t0).size(), 1u);
  EXPECT_TRUE(history.recent("softmax|rows=1", t0).empty());
  EXPECT_DOUBLE_EQ(history.run_seconds("sgemm|m=8192"), 0.044);
  EXPECT_DOUBLE_EQ(history.run_seconds("softmax|rows=1"), 0.0);
  // Five minutes later the samples are too old to stand for the baseline now.
  EXPECT_TRUE(history.recent("sgemm|m=8192", t0 + std::chrono::seconds(301)).empty());
}

TEST(BaselineHistory, KeepsOnlyTheNewestSamplesAndTheSlowestRun) {
  BaselineHistory history(std::chrono::seconds(300), 3);
  auto t0 = Clock::now();
  history.add("k", samples({1, 2}), 0.5, t0);
  history.add("k", samples({3, 4}), 0.2, t0);
  auto kept = history.recent("k", t0);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_DOUBLE_EQ(kept.front().gpu_us, 2);
  EXPECT_DOUBLE_EQ(kept.back().gpu_us, 4);
  EXPECT_DOUBLE_EQ(history.run_seconds("k"), 0.5);
  history.forget("k");
  EXPECT_TRUE(history.recent("k", t0).empty());
  EXPECT_DOUBLE_EQ(history.run_seconds("k"), 0.0);
}

TEST(FreshSamplesAgree, WithinTheDriftTheyAgree) {
  auto history = samples({43000, 43050, 42980, 43020, 43010});
  EXPECT_TRUE(fresh_samples_agree(history, samples({43100, 42900}), 0.01, 0.25));
}

TEST(FreshSamplesAgree, ASlowerGpuDisagrees) {
  // 3% slower: a neighbour, a lower power limit, a warmer GPU. The baseline is sampled again.
  auto history = samples({43000, 43050, 42980, 43020, 43010});
  EXPECT_FALSE(fresh_samples_agree(history, samples({44300, 44250}), 0.01, 0.25));
  EXPECT_FALSE(fresh_samples_agree(history, samples({41700, 41800}), 0.01, 0.25));
}

TEST(FreshSamplesAgree, AThrottledFreshSampleDisagrees) {
  auto history = samples({43000, 43050, 42980, 43020, 43010});
  auto fresh = samples({43000});
  fresh.push_back({43010, 1000});  // the clock fell by half
  EXPECT_FALSE(fresh_samples_agree(history, fresh, 0.01, 0.25));
}

TEST(FreshSamplesAgree, ANoisyHistoryWidensTheToleranceByItsSpread) {
  // Short kernels jitter by several percent from sample to sample: two fresh samples 4% off are
  // within three standard errors of such a history, and would be outside the bare 1% drift.
  auto noisy = samples({7.0, 7.5, 6.8, 7.3, 7.1, 6.9, 7.4});
  EXPECT_TRUE(fresh_samples_agree(noisy, samples({7.4, 7.35}), 0.01, 0.25));
  auto steady = samples({7.0, 7.0, 7.0, 7.01, 6.99, 7.0, 7.0});
  EXPECT_FALSE(fresh_samples_agree(steady, samples({7.4, 7.35}), 0.01, 0.25));
}

TEST(FreshSamplesAgree, TooLittleHistoryNeverAgrees) {
  EXPECT_FALSE(fresh_samples_agree(samples({43000, 43000}), samples({43000}), 0.01, 0.25));
  EXPECT_FALSE(fresh_samples_agree(samples({43000, 43000, 43000}), {}, 0.01, 0.25));
}

// A task with small shapes and large ones (over 64 MiB).
TaskSpec copy_task() {
  auto task = parse_task(R"({
    "format": 1, "name": "copy", "description": "out = x", "tags": ["elementwise"],
    "sizes": {"n": 33554432},
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["n"]}],
    "shapes": [{"n": 1}, {"n": 4097}, {"n": 8388608}, {}],
    "holdout": [{"n": 268435456}],
    "tolerance": {"atol": 1e-6, "rtol": 1e-6, "max_error": 1e-4},
    "flops": "0", "bytes": "8*n"})",
                         "copy/task.json");
  if (!task) throw std::runtime_error(task.error());
  return *task;
}

TEST(VerificationRounds, SmallShapesGetEveryRound) {
  TaskSpec task = copy_task();
  EvalOptions options;
  EXPECT_EQ(*verification_rounds(options, task, task.bind({{"n", 4097}})), 5);
  // 2 x 32 MiB: exactly 64 MiB is still small.
  EXPECT_EQ(*verification_rounds(options, task, task.bind({{"n", 8388608}})), 5);
}

TEST(VerificationRounds, LargeShapesGetOne) {
  TaskSpec task = copy_task();
  EvalOptions options;
  EXPECT_EQ(*verification_rounds(options, task, task.bind({})), 1);  // 2 x 128 MiB
  EXPECT_EQ(*verification_rounds(options, task, task.bind({{"n", 268435456}})), 1);
  options.large_shape_rounds = 2;
  EXPECT_EQ(*verification_rounds(options, task, task.bind({})), 2);
  options.large_shape_bytes = int64_t(1) << 30;
  EXPECT_EQ(*verification_rounds(options, task, task.bind({})), 5);
  // `--rounds 1` caps everything.
  options.rounds = 1;
  EXPECT_EQ(*verification_rounds(options, task, task.bind({{"n", 4097}})), 1);
}

}  // namespace
}  // namespace kopt::worker
