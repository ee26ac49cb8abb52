// Whether an endpoint is up. After `down_after_failures` calls in a row fail in a way retrying
// might fix (outage, overload, network), the endpoint counts as down: calls are refused at once
// (kUnavailable) until `down_retry` has passed, then a single probe call goes through, and its
// success brings the endpoint back. Meanwhile the daemon keeps its GPU work going.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "llm/llm_client.h"
#include "llm/llm_types.h"

namespace kopt {

class EndpointHealth {
 public:
  EndpointHealth(int down_after_failures, std::chrono::milliseconds down_retry);

  // Whether a call may go out now; when not, `refused` says until when.
  bool admit(LlmAvailability& refused);
  // The outcome of an admitted call.
  void finished(LlmStatus status, const std::string& reason,
                std::optional<std::chrono::milliseconds> retry_after);

  LlmAvailability availability() const;

 private:
  using Clock = std::chrono::steady_clock;
  const int down_after_;
  const std::chrono::milliseconds down_retry_;
  mutable std::mutex mutex_;
  int consecutive_failures_ = 0;
  bool down_ = false;
  bool probe_in_flight_ = false;
  Clock::time_point retry_at_{};
  std::string reason_;
};

}  // namespace kopt
