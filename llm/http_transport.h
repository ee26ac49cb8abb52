// One HTTP POST through libcurl, with connect and total timeouts, a cap on the response size,
// Retry-After parsing and cancellation. No retries here: the provider client decides those.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

struct HttpPost {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  bool get = false;  // a GET without a body (a models list) instead of the POST
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds timeout{300'000};
  size_t max_response_bytes = 1u << 20;
  const std::atomic<bool>* cancel = nullptr;  // polled during the transfer
};

struct HttpReply {
  enum class Outcome {
    kResponse,    // a complete response with a status (any status)
    kTimeout,     // connect or total timeout
    kConnection,  // refused, reset, name not resolved, body cut off
    kTooLarge,    // the body passed max_response_bytes; the transfer was stopped
    kCancelled,   // `cancel` became true
    kInvalid,     // the request could not be made (a malformed URL, an unsupported scheme)
  };
  Outcome outcome = Outcome::kResponse;
  long status = 0;
  std::string body;
  std::optional<std::chrono::milliseconds> retry_after;  // Retry-After or retry-after-ms
  std::string error;                                     // libcurl's description, if any
};

HttpReply http_post(const HttpPost& post);

// Parses a Retry-After value: delta seconds ("120") or an HTTP date; nullopt when neither.
std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value);

}  // namespace kopt
