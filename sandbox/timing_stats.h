// Statistics of timing samples and the decision when to stop sampling, in the manner of nvbench:
// pure arithmetic on numbers the worker measured, so it is tested without a GPU.
//
// Noise is the relative standard error of the median, estimated robustly:
//   noise = 1.2533 * (1.4826 * MAD) / (sqrt(n) * median)
// 1.4826 * MAD (median absolute deviation) estimates the standard deviation without being pulled
// by the rare slow sample (a context switch, an ECC scrub), and 1.2533 * sigma / sqrt(n) is the
// large-sample standard error of a median. It is the precision of the number we report, so it
// shrinks as samples accumulate: a kernel with 2% sample-to-sample spread converges after about
// 100 samples instead of always running into the GPU-time cap, as a spread criterion would.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "sandbox/protocol.h"

namespace kopt {

// One timed execution of a launch plan.
struct TimingSample {
  double gpu_us = 0;        // span of the plan's kernels (CUPTI records)
  double sm_clock_mhz = 0;  // SM clock estimated around the sample; 0 = unknown
};

// The median of `values` (mean of the middle two for even counts); 0 for none.
double median(std::vector<double> values);

// Median absolute deviation from `center`.
double median_absolute_deviation(const std::vector<double>& values, double center);

// The relative standard error of the median described above; 0 for fewer than 2 values.
double relative_median_error(const std::vector<double>& values);

// Times of the samples that were not throttled: a sample whose clock estimate is more than
// `max_clock_drop` (0.25 = 25%) below the highest estimate of the run is dropped, because it
// measures the power manager, not the kernel. Samples without an estimate are kept. When every
// sample would be dropped the estimates are unusable and all are kept.
std::vector<double> unthrottled_times(const std::vector<TimingSample>& samples,
                                      double max_clock_drop);

// Median, noise, minimum and counts over the unthrottled samples.
TimingSummary summarize_samples(const std::vector<TimingSample>& samples, double max_clock_drop);

struct StoppingParams {
  int min_samples = 10;          // unthrottled samples before noise or the GPU cap may stop
  double max_noise = 0.005;      // stop once relative_median_error falls to this
  double max_gpu_seconds = 0.5;  // or once this much GPU time was sampled
  double max_wall_seconds = 20;  // or once this much wall time passed since the start (always)
  double max_clock_drop = 0.25;  // throttle threshold, see unthrottled_times
  int max_samples = 1 << 20;     // memory guard for very short kernels
  // Long samples (every one at least long_sample_us) need only min_samples_long before noise or
  // the cap may stop: launch overhead and clock jitter are then far below max_noise, and ten
  // samples of a 90 ms GEMM would cost 0.9 s of GPU per side for no better number. The noise
  // criterion still has to be met (or the GPU cap reached).
  int min_samples_long = 5;
  double long_sample_us = 10'000;
  // Screening (0: off): stop once the median is above this bar beyond its noise, by
  // bar_standard_errors standard errors of the median. A kernel above the bar is no new best
  // whatever its exact median, so its further samples would buy nothing (issue 35: 113 of 150
  // timings of a 200 s night with the fake model stopped here, on an H200).
  double screen_bar_us = 0;
  double bar_standard_errors = 4;
};

// The stopping parameters an evaluation request asks for.
StoppingParams stopping_params(const EvalOptions& options);

enum class StopReason { kNotYet, kConverged, kGpuTimeCap, kWallDeadline, kSampleCap, kAboveBar };
std::string stop_reason_name(StopReason reason);

// Decides, sample by sample, when a measurement has enough samples. The wall clock is injected
// so tests can drive the deadline.
class StoppingCriterion {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit StoppingCriterion(StoppingParams params, Clock clock = std::chrono::steady_clock::now);

  void add(const TimingSample& sample);
  // True once sampling should stop; stays true afterwards.
  bool finished();
  StopReason reason() const { return reason_; }

  TimingSummary summary() const;
  const std::vector<TimingSample>& samples() const { return samples_; }
  double gpu_seconds() const { return gpu_seconds_; }
  // Samples needed before the noise criterion or the GPU cap may stop (see min_samples_long).
  size_t required_samples() const;
  // The noise and the median at the last check (updated by finished(); 0 before the first).
  double noise() const { return noise_; }
  double checked_median_us() const { return median_; }

 private:
  StoppingParams params_;
  Clock clock_;
  std::chrono::steady_clock::time_point start_;
  std::vector<TimingSample> samples_;
  double gpu_seconds_ = 0;
  double shortest_us_ = 0;
  double noise_ = 0;
  double median_ = 0;
  size_t next_noise_check_ = 0;  // sample count at which the noise is recomputed next
  StopReason reason_ = StopReason::kNotYet;
};

// Screening with a baseline history (issue 35): whether the baseline starts sampling beside a
// candidate timed against the bar `bar_us`. Not while the candidate has fewer than its minimum
// samples, has stopped above the bar, or has its median at or above it: such a kernel ends
// `screened` and needs no ratio of its own (the history's baseline median gives it one).
bool baseline_joins_screened(const StoppingCriterion& candidate, double bar_us);

}  // namespace kopt
