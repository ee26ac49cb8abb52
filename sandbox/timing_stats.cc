#include "sandbox/timing_stats.h"

#include <algorithm>
#include <cmath>

#include "common/enum_names.h"

namespace kopt {

namespace {
// sigma ~= 1.4826 * MAD for normal data; SE(median) ~= sqrt(pi/2) * sigma / sqrt(n).
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianStandardError = 1.2533;
}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double median_absolute_deviation(const std::vector<double>& values, double center) {
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - center));
  return median(std::move(deviations));
}

double relative_median_error(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double m = median(values);
  if (m <= 0) return 0;
  double sigma = kMadToSigma * median_absolute_deviation(values, m);
  return kMedianStandardError * sigma / (std::sqrt(static_cast<double>(values.size())) * m);
}

std::vector<double> unthrottled_times(const std::vector<TimingSample>& samples,
                                      double max_clock_drop) {
  double max_clock = 0;
  for (const auto& s : samples) max_clock = std::max(max_clock, s.sm_clock_mhz);
  double threshold = max_clock * (1 - max_clock_drop);
  std::vector<double> kept;
  kept.reserve(samples.size());
  for (const auto& s : samples) {
    if (s.sm_clock_mhz <= 0 || s.sm_clock_mhz >= threshold) kept.push_back(s.gpu_us);
  }
  if (kept.empty()) {
    for (const auto& s : samples) kept.push_back(s.gpu_us);
  }
  return kept;
}

TimingSummary summarize_samples(const std::vector<TimingSample>& samples, double max_clock_drop) {
  TimingSummary summary;
  std::vector<double> times = unthrottled_times(samples, max_clock_drop);
  summary.samples = static_cast<int>(times.size());
  summary.discarded = static_cast<int>(samples.size() - times.size());
  if (times.empty()) return summary;
  summary.min_us = *std::min_element(times.begin(), times.end());
  summary.noise = relative_median_error(times);
  summary.median_us = median(std::move(times));
  return summary;
}

StoppingParams stopping_params(const EvalOptions& options) {
  StoppingParams params;
  params.min_samples = options.min_samples;
  params.max_noise = options.max_noise;
  params.max_gpu_seconds = options.max_gpu_seconds;
  params.max_wall_seconds = options.max_wall_seconds;
  params.min_samples_long = options.min_samples_long;
  params.long_sample_us = options.long_sample_ms * 1e3;
  return params;
}

constexpr EnumNames<StopReason, 6> kStopReasonNames = {
    {"not yet", "converged", "gpu time cap", "wall deadline", "sample cap", "above the bar"}};
static_assert(names_each_enumerator(kStopReasonNames, StopReason::kAboveBar));

std::string stop_reason_name(StopReason reason) {
  return enum_name(kStopReasonNames, reason, "unknown");
}

StoppingCriterion::StoppingCriterion(StoppingParams params, Clock clock)
    : params_(params), clock_(std::move(clock)), start_(clock_()) {}

void StoppingCriterion::add(const TimingSample& sample) {
  shortest_us_ = samples_.empty() ? sample.gpu_us : std::min(shortest_us_, sample.gpu_us);
  samples_.push_back(sample);
  gpu_seconds_ += sample.gpu_us * 1e-6;
}

bool StoppingCriterion::finished() {
  if (reason_ != StopReason::kNotYet) return true;
  std::chrono::duration<double> elapsed = clock_() - start_;
  if (elapsed.count() >= params_.max_wall_seconds) {
    reason_ = StopReason::kWallDeadline;
    return true;
  }
  if (samples_.size() >= static_cast<size_t>(params_.max_samples)) {
    reason_ = StopReason::kSampleCap;
    return true;
  }
  if (samples_.size() < required_samples()) return false;
  // Median and MAD cost O(n): recompute only after the sample count grew by about 3%, which
  // keeps a run of 10^5 short samples linear overall while delaying the stop by at most 3%.
  if (samples_.size() < next_noise_check_) return false;
  next_noise_check_ = samples_.size() + std::max<size_t>(1, samples_.size() / 32);
  std::vector<double> times = unthrottled_times(samples_, params_.max_clock_drop);
  if (times.size() < required_samples()) return false;
  noise_ = relative_median_error(times);
  median_ = median(times);
  if (params_.screen_bar_us > 0 &&
      median_ * (1 - params_.bar_standard_errors * noise_) >= params_.screen_bar_us) {
    reason_ = StopReason::kAboveBar;
  } else if (noise_ <= params_.max_noise) {
    reason_ = StopReason::kConverged;
  } else if (gpu_seconds_ >= params_.max_gpu_seconds) {
    reason_ = StopReason::kGpuTimeCap;
  }
  return reason_ != StopReason::kNotYet;
}

size_t StoppingCriterion::required_samples() const {
  bool all_long = !samples_.empty() && shortest_us_ >= params_.long_sample_us;
  return size_t(all_long ? std::min(params_.min_samples, params_.min_samples_long)
                         : params_.min_samples);
}

TimingSummary StoppingCriterion::summary() const {
  return summarize_samples(samples_, params_.max_clock_drop);
}

bool baseline_joins_screened(const StoppingCriterion& candidate, double bar_us) {
  if (candidate.samples().size() < candidate.required_samples()) return false;
  if (candidate.reason() == StopReason::kAboveBar) return false;
  // The median of the last check (finished() computes it every ~3% more samples), so a long run
  // of short samples does not pay for a median per batch.
  return candidate.checked_median_us() > 0 && candidate.checked_median_us() < bar_us;
}

}  // namespace kopt
