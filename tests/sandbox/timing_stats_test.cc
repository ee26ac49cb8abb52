#include "sandbox/timing_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

namespace kopt {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A wall clock the test moves by hand.
struct FakeClock {
  steady_clock::time_point now = steady_clock::time_point{} + std::chrono::hours(1);
  StoppingCriterion::Clock function() {
    return [this] { return now; };
  }
};

TEST(TimingStats, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({5}), 5);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({1, 1000, 2, 3, 1e9}), 3);  // one wild sample does not move it
}

TEST(TimingStats, MedianAbsoluteDeviation) {
  EXPECT_EQ(median_absolute_deviation({1, 2, 3, 4, 100}, 3), 1);
  EXPECT_EQ(median_absolute_deviation({7, 7, 7}, 7), 0);
}

TEST(TimingStats, RelativeMedianErrorFollowsTheDocumentedFormula) {
  std::vector<double> values = {98, 99, 100, 101, 102};
  // median 100, MAD 1: 1.2533 * 1.4826 * 1 / (sqrt(5) * 100)
  EXPECT_NEAR(relative_median_error(values), 1.2533 * 1.4826 / (std::sqrt(5.0) * 100), 1e-12);
  EXPECT_EQ(relative_median_error({100}), 0);
  EXPECT_EQ(relative_median_error({100, 100, 100}), 0);
}

TEST(TimingStats, RelativeMedianErrorShrinksWithMoreSamples) {
  std::mt19937 rng(1);
  std::normal_distribution<double> dist(100, 2);
  std::vector<double> few, many;
  for (int i = 0; i < 20; ++i) few.push_back(dist(rng));
  for (int i = 0; i < 2000; ++i) many.push_back(dist(rng));
  EXPECT_GT(relative_median_error(few), 3 * relative_median_error(many));
  // sigma/median = 2%: the standard error of the median of 2000 is about 1.25 * 2% / 45.
  EXPECT_NEAR(relative_median_error(many), 1.2533 * 0.02 / std::sqrt(2000.0), 2e-4);
}

TEST(TimingStats, ThrottledSamplesAreDiscarded) {
  std::vector<TimingSample> samples = {{100, 1980}, {101, 1975}, {160, 1200},
                                       {99, 1980},  {150, 1300}, {100, 0}};
  auto kept = unthrottled_times(samples, 0.25);
  EXPECT_EQ(kept, (std::vector<double>{100, 101, 99, 100}));  // unknown clock (0) is kept
  TimingSummary summary = summarize_samples(samples, 0.25);
  EXPECT_EQ(summary.samples, 4);
  EXPECT_EQ(summary.discarded, 2);
  EXPECT_EQ(summary.median_us, 100);
  EXPECT_EQ(summary.min_us, 99);
  // A slightly slower clock (within the threshold) is not throttling.
  EXPECT_EQ(unthrottled_times({{100, 1980}, {105, 1600}}, 0.25).size(), 2u);
}

TEST(TimingStats, UnusableClockEstimatesKeepEverySample) {
  // Nothing is under the threshold of its own maximum, so nothing may be dropped.
  EXPECT_EQ(unthrottled_times({{100, 1000}, {101, 1000}}, 0.25).size(), 2u);
  EXPECT_EQ(summarize_samples({}, 0.25).samples, 0);
}

TEST(StoppingCriterion, ConvergingSamplesStopAtTheMinimum) {
  FakeClock clock;
  StoppingParams params;  // min 10, 0.5% noise
  StoppingCriterion criterion(params, clock.function());
  int added = 0;
  while (!criterion.finished()) {
    criterion.add({300.0 + (added % 3) * 0.3, 1980});  // 0.1% spread
    ++added;
    ASSERT_LT(added, 1000);
  }
  EXPECT_EQ(added, 10);
  EXPECT_EQ(criterion.reason(), StopReason::kConverged);
  EXPECT_LE(criterion.noise(), params.max_noise);
  TimingSummary summary = criterion.summary();
  EXPECT_EQ(summary.samples, 10);
  EXPECT_NEAR(summary.median_us, 300.3, 1e-9);
}

TEST(StoppingCriterion, ModerateNoiseConvergesAfterMoreSamples) {
  FakeClock clock;
  StoppingCriterion criterion(StoppingParams{}, clock.function());
  std::mt19937 rng(7);
  std::normal_distribution<double> dist(10.0, 0.3);  // 3% spread, 10 us kernels
  int added = 0;
  while (!criterion.finished()) {
    criterion.add({dist(rng), 1980});
    ++added;
    ASSERT_LT(added, 100000);
  }
  EXPECT_EQ(criterion.reason(), StopReason::kConverged);
  // (1.2533 * 3% / 0.5%)^2 ~ 57 samples, give or take the estimate's own noise and the
  // amortized re-checks.
  EXPECT_GT(added, 25);
  EXPECT_LT(added, 150);
}

TEST(StoppingCriterion, NoisyNeverConvergingHitsTheGpuCap) {
  FakeClock clock;
  StoppingParams params;
  params.max_gpu_seconds = 0.1;
  StoppingCriterion criterion(params, clock.function());
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(50, 1000);  // wildly noisy, 0.5 ms mean
  int added = 0;
  while (!criterion.finished()) {
    criterion.add({dist(rng), 1980});
    ++added;
    ASSERT_LT(added, 100000);
  }
  EXPECT_EQ(criterion.reason(), StopReason::kGpuTimeCap);
  EXPECT_GE(criterion.gpu_seconds(), 0.1);
  EXPECT_LT(criterion.gpu_seconds(), 0.1 * 1.1);  // the amortized check overshoots by < 4%
  EXPECT_GT(criterion.noise(), params.max_noise);
}

TEST(StoppingCriterion, MinSamplesComeBeforeTheGpuCap) {
  FakeClock clock;
  StoppingParams params;
  params.max_gpu_seconds = 0.001;  // the first sample alone exceeds it
  StoppingCriterion criterion(params, clock.function());
  int added = 0;
  while (!criterion.finished()) {
    criterion.add({5000.0 * (1 + added % 2), 1980});
    ++added;
  }
  EXPECT_EQ(added, 10);
  EXPECT_EQ(criterion.reason(), StopReason::kGpuTimeCap);
}

TEST(StoppingCriterion, LongSamplesNeedFewerButStillAStableMedian) {
  FakeClock clock;
  StoppingParams params;  // min_samples 10, min_samples_long 5 at >= 10 ms, cap 0.5 s
  StoppingCriterion steady(params, clock.function());
  int added = 0;
  while (!steady.finished()) {
    steady.add({90'000.0 * (1 + 0.0005 * (added % 3)), 1980});  // 90 ms, 0.05% spread
    ++added;
  }
  EXPECT_EQ(added, 5);
  EXPECT_EQ(steady.reason(), StopReason::kConverged);

  // One short sample among them: the usual minimum applies.
  StoppingCriterion mixed(params, clock.function());
  added = 0;
  while (!mixed.finished()) {
    mixed.add({added == 2 ? 9'000.0 : 90'000.0, 1980});
    ++added;
  }
  EXPECT_EQ(added, 10);

  // Long but noisy: the noise criterion still decides, here the GPU cap stops it.
  StoppingCriterion noisy(params, clock.function());
  added = 0;
  while (!noisy.finished()) {
    noisy.add({40'000.0 + (added * 37 % 11) * 4'000.0, 1980});  // 40 to 80 ms
    ++added;
  }
  EXPECT_EQ(noisy.reason(), StopReason::kGpuTimeCap);
  EXPECT_GE(added, 9);
}

TEST(StoppingCriterion, WallDeadlineStopsEvenBelowMinSamples) {
  FakeClock clock;
  StoppingParams params;
  params.max_wall_seconds = 2;
  StoppingCriterion criterion(params, clock.function());
  criterion.add({100, 1980});
  EXPECT_FALSE(criterion.finished());
  clock.now += milliseconds(1999);
  EXPECT_FALSE(criterion.finished());
  clock.now += milliseconds(1);
  EXPECT_TRUE(criterion.finished());
  EXPECT_EQ(criterion.reason(), StopReason::kWallDeadline);
  EXPECT_TRUE(criterion.finished());  // and stays finished
}

TEST(StoppingCriterion, ThrottledSamplesDoNotCountTowardsTheMinimum) {
  FakeClock clock;
  StoppingCriterion criterion(StoppingParams{}, clock.function());
  // Alternate a full-clock and a throttled sample: 20 samples give 10 usable ones.
  int added = 0;
  while (!criterion.finished()) {
    bool throttled = added % 2 == 1;
    criterion.add({throttled ? 400.0 : 300.0, throttled ? 1000.0 : 1980.0});
    ++added;
    ASSERT_LT(added, 1000);
  }
  EXPECT_EQ(added, 19);  // the 10th unthrottled sample is the 19th overall
  TimingSummary summary = criterion.summary();
  EXPECT_EQ(summary.samples, 10);
  EXPECT_EQ(summary.discarded, 9);
  EXPECT_EQ(summary.median_us, 300);
}

TEST(StoppingCriterion, SampleCapBoundsMemory) {
  FakeClock clock;
  StoppingParams params;
  params.max_samples = 50;
  params.max_noise = 0;  // never converges
  params.max_gpu_seconds = 1e9;
  StoppingCriterion criterion(params, clock.function());
  int added = 0;
  while (!criterion.finished()) {
    criterion.add({1.0 + (added % 5), 1980});
    ++added;
  }
  EXPECT_EQ(added, 50);
  EXPECT_EQ(criterion.reason(), StopReason::kSampleCap);
}

// Screening's stop (issue 35): a candidate clearly above the bar stops at the minimum; one whose
// median is above the bar but within its noise of it samples on, as does any with no bar.
int samples_until_stopped(StoppingParams params, double center_us, double spread, StopReason* why) {
  FakeClock clock;
  StoppingCriterion criterion(params, clock.function());
  std::mt19937 rng(11);
  std::normal_distribution<double> dist(center_us, center_us * spread);
  int added = 0;
  while (!criterion.finished() && added < 100000) {
    criterion.add({dist(rng), 1980});
    ++added;
  }
  *why = criterion.reason();
  return added;
}

TEST(StoppingCriterion, AboveTheScreeningBarStopsAtTheMinimum) {
  StoppingParams params;
  params.max_gpu_seconds = 10;
  params.screen_bar_us = 100;
  StopReason why{};
  // 20% above the bar with 3% spread: ten samples say so beyond any doubt.
  EXPECT_EQ(samples_until_stopped(params, 120, 0.03, &why), 10);
  EXPECT_EQ(why, StopReason::kAboveBar);
  EXPECT_EQ(stop_reason_name(why), "above the bar");
  // The same kernel with no bar samples until its noise converges.
  params.screen_bar_us = 0;
  EXPECT_GT(samples_until_stopped(params, 120, 0.03, &why), 25);
  EXPECT_EQ(why, StopReason::kConverged);
  // Below the bar: never screened out, timed in full.
  params.screen_bar_us = 150;
  EXPECT_GT(samples_until_stopped(params, 120, 0.03, &why), 25);
  EXPECT_EQ(why, StopReason::kConverged);
}

TEST(StoppingCriterion, AboveTheBarWithinItsNoiseSamplesOn) {
  StoppingParams params;
  params.max_gpu_seconds = 10;
  params.screen_bar_us = 100;
  StopReason why{};
  // 1% above the bar, 3% spread: ten samples' median error (~1.2%) is no proof, so it samples on
  // until the bar is four standard errors away or its noise converges.
  int added = samples_until_stopped(params, 101, 0.03, &why);
  EXPECT_GT(added, 10);
  EXPECT_TRUE(why == StopReason::kAboveBar || why == StopReason::kConverged)
      << stop_reason_name(why);
}

// Screening with a baseline history (issue 35): the baseline joins a candidate only once the
// candidate has its minimum samples and a median below the bar; one above it, stopped there or
// still sampling within its noise, goes on alone.
TEST(StoppingCriterion, TheBaselineJoinsOnlyACandidateBelowTheBar) {
  FakeClock clock;
  StoppingParams params;
  params.max_gpu_seconds = 10;
  params.screen_bar_us = 100;
  auto after = [&](double center_us, double spread, int samples) {
    auto criterion = std::make_unique<StoppingCriterion>(params, clock.function());
    std::mt19937 rng(5);
    std::normal_distribution<double> dist(center_us, center_us * spread);
    for (int i = 0; i < samples && !criterion->finished(); ++i) criterion->add({dist(rng), 1980});
    (void)criterion->finished();  // the timing loop checks after each batch
    return criterion;
  };
  // Below the bar: not before the minimum samples, then at once.
  EXPECT_FALSE(baseline_joins_screened(*after(90, 0.01, 9), 100));
  EXPECT_TRUE(baseline_joins_screened(*after(90, 0.01, 10), 100));
  // Just above the bar within its noise: it samples on, and alone.
  auto near = after(101, 0.03, 30);
  EXPECT_EQ(near->reason(), StopReason::kNotYet);
  EXPECT_FALSE(baseline_joins_screened(*near, 100));
  // Far above: stopped above the bar, alone.
  auto far = after(150, 0.01, 30);
  EXPECT_EQ(far->reason(), StopReason::kAboveBar);
  EXPECT_FALSE(baseline_joins_screened(*far, 100));
  // Its median at the bar is not below it.
  EXPECT_FALSE(baseline_joins_screened(*after(100, 0.0, 12), 100));
}

TEST(StoppingCriterion, ParamsComeFromTheRequestOptions) {
  EvalOptions options;
  options.min_samples = 25;
  options.min_samples_long = 3;
  options.long_sample_ms = 2.5;
  options.max_noise = 0.01;
  options.max_gpu_seconds = 2;
  options.max_wall_seconds = 7;
  StoppingParams params = stopping_params(options);
  EXPECT_EQ(params.min_samples, 25);
  EXPECT_EQ(params.min_samples_long, 3);
  EXPECT_DOUBLE_EQ(params.long_sample_us, 2500);
  EXPECT_EQ(params.max_noise, 0.01);
  EXPECT_EQ(params.max_gpu_seconds, 2);
  EXPECT_EQ(params.max_wall_seconds, 7);
  EXPECT_EQ(stop_reason_name(StopReason::kGpuTimeCap), "gpu time cap");
}

}  // namespace
}  // namespace kopt
