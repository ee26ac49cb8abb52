#include "sandbox/worker/baseline_history.h"

#include <algorithm>
#include <cmath>

namespace kopt::worker {

std::vector<TimingSample> BaselineHistory::recent(const std::string& key, Clock::time_point now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  auto& samples = it->second.samples;
  std::erase_if(samples, [&](const auto& s) { return now - s.first > max_age_; });
  std::vector<TimingSample> out;
  out.reserve(samples.size());
  for (const auto& [when, sample] : samples) out.push_back(sample);
  return out;
}

double BaselineHistory::run_seconds(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? 0.0 : it->second.run_seconds;
}

void BaselineHistory::add(const std::string& key, const std::vector<TimingSample>& samples,
                          double run_seconds, Clock::time_point now) {
  Entry& entry = entries_[key];
  for (const auto& s : samples) entry.samples.emplace_back(now, s);
  if (entry.samples.size() > max_samples_)
    entry.samples.erase(entry.samples.begin(), entry.samples.end() - std::ptrdiff_t(max_samples_));
  entry.run_seconds = std::max(entry.run_seconds, run_seconds);
}

bool fresh_samples_agree(const std::vector<TimingSample>& history,
                         const std::vector<TimingSample>& fresh, double drift,
                         double max_clock_drop) {
  // Throttled samples are judged together: a history from full clocks and fresh samples under a
  // power cap must disagree, so the clock drop is measured over both at once.
  std::vector<TimingSample> both = history;
  both.insert(both.end(), fresh.begin(), fresh.end());
  std::vector<double> kept_history, kept_fresh;
  double top_clock = 0;
  for (const auto& s : both) top_clock = std::max(top_clock, s.sm_clock_mhz);
  auto throttled = [&](const TimingSample& s) {
    return top_clock > 0 && s.sm_clock_mhz > 0 && s.sm_clock_mhz < (1 - max_clock_drop) * top_clock;
  };
  for (const auto& s : history)
    if (!throttled(s)) kept_history.push_back(s.gpu_us);
  for (const auto& s : fresh) {
    if (throttled(s)) return false;  // a throttled fresh sample says the conditions changed
    kept_fresh.push_back(s.gpu_us);
  }
  if (kept_history.size() < 3 || kept_fresh.empty()) return false;
  double center = median(kept_history);
  if (!(center > 0)) return false;
  double spread = 1.4826 * median_absolute_deviation(kept_history, center) / center;
  double tolerance = std::max(drift, 3 * spread / std::sqrt(double(kept_fresh.size())));
  return std::abs(median(kept_fresh) / center - 1) <= tolerance;
}

}  // namespace kopt::worker
