#include "llm/endpoint_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kopt {

EndpointHealth::EndpointHealth(int down_after_failures, std::chrono::milliseconds down_retry)
    : down_after_(std::max(1, down_after_failures)), down_retry_(down_retry) {}

bool EndpointHealth::admit(LlmAvailability& refused) {
  std::lock_guard lock(mutex_);
  if (!down_) return true;
  // One probe at a time once the wait is over; everyone else keeps waiting for its verdict.
  if (Clock::now() >= retry_at_ && !probe_in_flight_) {
    probe_in_flight_ = true;
    return true;
  }
  refused.available = false;
  refused.retry_at =
      probe_in_flight_ ? std::max(retry_at_, Clock::now() + down_retry_ / 10) : retry_at_;
  refused.reason = reason_;
  return false;
}

void EndpointHealth::finished(LlmStatus status, const std::string& reason,
                              std::optional<std::chrono::milliseconds> retry_after) {
  std::lock_guard lock(mutex_);
  probe_in_flight_ = false;
  // Any answer that is not an outage (a completion, a wrong key, a malformed body) shows the
  // endpoint is there.
  if (!llm_status_retryable(status) && status != LlmStatus::kCancelled) {
    if (down_) spdlog::info("llm: endpoint is back ({})", llm_status_name(status));
    consecutive_failures_ = 0;
    down_ = false;
    reason_.clear();
    return;
  }
  if (status == LlmStatus::kCancelled) return;
  ++consecutive_failures_;
  reason_ = reason;
  if (consecutive_failures_ >= down_after_) {
    auto wait = std::max(down_retry_, retry_after.value_or(std::chrono::milliseconds(0)));
    if (!down_) {
      spdlog::warn("llm: endpoint down after {} failed calls ({}); next try in {} s",
                   consecutive_failures_, reason, wait.count() / 1000.0);
    }
    down_ = true;
    retry_at_ = Clock::now() + wait;
  }
}

LlmAvailability EndpointHealth::availability() const {
  std::lock_guard lock(mutex_);
  LlmAvailability a;
  // Once the wait is over the endpoint counts as available again, so that a caller who checks
  // before calling sends the probe.
  auto now = Clock::now();
  a.available = !down_ || (now >= retry_at_ && !probe_in_flight_);
  a.retry_at = a.available ? now : retry_at_;
  a.reason = reason_;
  return a;
}

}  // namespace kopt
