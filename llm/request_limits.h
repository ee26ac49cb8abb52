// What keeps one provider within its limits: a cap on requests in flight, a pace of requests
// per minute, the backoff between attempts, and a shutdown signal that cuts every wait short.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>

namespace kopt {

using SteadyClock = std::chrono::steady_clock;

// Set once at shutdown; every wait below returns early when it is.
class Cancellation {
 public:
  void cancel();
  bool cancelled() const { return flag_.load(); }
  const std::atomic<bool>& flag() const { return flag_; }
  // Sleeps until `deadline`; false when cancelled first.
  bool sleep_until(SteadyClock::time_point deadline) const;

 private:
  std::atomic<bool> flag_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
};

// A counting semaphore for requests in flight.
class ConcurrencyLimit {
 public:
  explicit ConcurrencyLimit(int limit) : free_(limit) {}

  // Waits for a free slot; false when `cancel` fired first.
  bool acquire(const Cancellation& cancel);
  void release();
  int in_flight_peak() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
  int in_flight_ = 0;
  int peak_ = 0;
};

// One slot of a ConcurrencyLimit, given back when this owner goes, however the call ends: a
// throw between acquire and release once leaked four slots and no LLM call was made again
// that night.
class ConcurrencySlot {
 public:
  // Waits for a slot; held() is false when `cancel` fired first.
  ConcurrencySlot(ConcurrencyLimit& limit, const Cancellation& cancel)
      : limit_(limit), held_(limit.acquire(cancel)) {}
  ~ConcurrencySlot() {
    if (held_) limit_.release();
  }
  ConcurrencySlot(const ConcurrencySlot&) = delete;
  ConcurrencySlot& operator=(const ConcurrencySlot&) = delete;

  bool held() const { return held_; }

 private:
  ConcurrencyLimit& limit_;
  bool held_;
};

// Spaces request starts 60/rpm seconds apart (no bursts), so a server's per-minute limit is
// never hit by kopt itself. rpm 0: no pacing.
class RequestPacer {
 public:
  explicit RequestPacer(double requests_per_minute);
  // The moment the caller's request may start; each call takes the next slot.
  SteadyClock::time_point reserve();

 private:
  std::mutex mutex_;
  std::chrono::nanoseconds interval_;
  SteadyClock::time_point next_{};
};

// Exponential backoff with jitter between attempts.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max);
  // The wait after failed attempt number `attempt` (1-based): initial * 2^(attempt-1), capped
  // at max, then drawn from its upper half so that clients failing together spread out. With
  // a server's Retry-After, that wait plus up to 10% (never less than the server asked).
  std::chrono::milliseconds delay(int attempt,
                                  std::optional<std::chrono::milliseconds> retry_after);

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::mutex mutex_;
  std::mt19937_64 random_;
};

}  // namespace kopt
