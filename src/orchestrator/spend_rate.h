// The spend-rate alarm: dollars per hour over a sliding window (10 minutes by default). A model
// that stalls burns money fastest when the loop runs at full speed, long before --max-usd is
// reached; the rate says so within minutes, and the orchestrator holds LLM work back until it
// falls under the limit again.
#pragma once

#include <chrono>
#include <deque>
#include <utility>

namespace kopt::orchestrator {

class SpendRate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SpendRate(std::chrono::milliseconds window = std::chrono::minutes(10))
      : window_(window) {}

  void add(Clock::time_point at, double usd);
  // What was spent in the window ending at `now`, per hour. Measured over the whole window
  // even early in a run, so that a burst at the start counts at its real rate.
  double usd_per_hour(Clock::time_point now);
  std::chrono::milliseconds window() const { return window_; }

 private:
  std::chrono::milliseconds window_;
  std::deque<std::pair<Clock::time_point, double>> spent_;
};

}  // namespace kopt::orchestrator
