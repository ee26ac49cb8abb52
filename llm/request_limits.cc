#include "llm/request_limits.h"

#include <algorithm>

namespace kopt {

void Cancellation::cancel() {
  {
    std::lock_guard lock(mutex_);
    flag_.store(true);
  }
  wake_.notify_all();
}

bool Cancellation::sleep_until(SteadyClock::time_point deadline) const {
  std::unique_lock lock(mutex_);
  return !wake_.wait_until(lock, deadline, [this] { return flag_.load(); });
}

bool ConcurrencyLimit::acquire(const Cancellation& cancel) {
  std::unique_lock lock(mutex_);
  // Polls the cancellation too: it has its own condition variable.
  while (free_ == 0) {
    if (cancel.cancelled()) return false;
    freed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (cancel.cancelled()) return false;
  --free_;
  ++in_flight_;
  peak_ = std::max(peak_, in_flight_);
  return true;
}

void ConcurrencyLimit::release() {
  {
    std::lock_guard lock(mutex_);
    ++free_;
    --in_flight_;
  }
  freed_.notify_one();
}

int ConcurrencyLimit::in_flight_peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

RequestPacer::RequestPacer(double requests_per_minute)
    : interval_(requests_per_minute > 0
                    ? std::chrono::nanoseconds(static_cast<int64_t>(60e9 / requests_per_minute))
                    : std::chrono::nanoseconds(0)) {}

SteadyClock::time_point RequestPacer::reserve() {
  std::lock_guard lock(mutex_);
  auto now = SteadyClock::now();
  if (interval_.count() == 0) return now;
  auto slot = std::max(now, next_);
  next_ = slot + interval_;
  return slot;
}

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
    : initial_(initial), max_(std::max(initial, max)), random_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::delay(int attempt,
                                         std::optional<std::chrono::milliseconds> retry_after) {
  std::lock_guard lock(mutex_);
  if (retry_after) {
    int64_t extra_max = std::min<int64_t>(1000, retry_after->count() / 10);
    std::uniform_int_distribution<int64_t> extra(0, std::max<int64_t>(0, extra_max));
    return *retry_after + std::chrono::milliseconds(extra(random_));
  }
  int64_t base = initial_.count();
  for (int i = 1; i < attempt && base < max_.count(); ++i) base *= 2;
  base = std::min(base, static_cast<int64_t>(max_.count()));
  std::uniform_int_distribution<int64_t> jitter(base / 2, std::max<int64_t>(base / 2, base));
  return std::chrono::milliseconds(jitter(random_));
}

}  // namespace kopt
