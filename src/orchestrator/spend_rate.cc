#include "src/orchestrator/spend_rate.h"

namespace kopt::orchestrator {

void SpendRate::add(Clock::time_point at, double usd) {
  if (usd > 0) spent_.emplace_back(at, usd);
}

double SpendRate::usd_per_hour(Clock::time_point now) {
  while (!spent_.empty() && spent_.front().first <= now - window_) spent_.pop_front();
  double sum = 0;
  for (const auto& [at, usd] : spent_) sum += usd;
  double hours = std::chrono::duration<double>(window_).count() / 3600.0;
  return hours > 0 ? sum / hours : 0;
}

}  // namespace kopt::orchestrator
