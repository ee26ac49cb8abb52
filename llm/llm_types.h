// What goes to an LLM and what comes back. A response is either a completion or a classified
// failure; the class says whether waiting and retrying can help.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

enum class LlmStatus {
  kOk,
  kRateLimited,  // 429 (Retry-After honoured)
  kServerError,  // 5xx, 529 overloaded
  kTimeout,      // no complete response within the provider's timeout
  kConnection,   // refused, reset, body cut off mid-transfer
  kAuth,         // 401, 403: a missing or wrong key
  kBadRequest,   // other 4xx: the request itself is wrong
  kNotFound,     // 404: usually an unknown model
  kMalformed,    // a body that is not the provider's response shape
  kEmpty,        // no choices, no content, or only whitespace
  kTruncated,    // cut off by the token limit (finish_reason length / stop_reason max_tokens)
  kRefused,      // the model declined (OpenAI "refusal", Anthropic stop_reason "refusal")
  kToolCall,     // a tool call instead of text (content null with tool_calls, a tool_use block)
  kTooLarge,     // over llm.max_response_bytes
  kUnavailable,  // the endpoint is down; not tried (see LlmAvailability::retry_at)
  kCancelled,    // the client was shut down while the call was under way
};

// "ok", "rate_limited", "server_error", ...: stable names for logs and the database.
const char* llm_status_name(LlmStatus status);

// Whether a later attempt may succeed where this one failed (the retry loop's rule).
bool llm_status_retryable(LlmStatus status);

struct LlmMessage {
  enum class Role { kUser, kAssistant };
  Role role = Role::kUser;
  std::string content;
  // How many leading bytes of `content` are the same in every call of this task and agent (the
  // contract, the capabilities, the kernel format): a provider that caches prompts by marker gets
  // one at this point (Anthropic's cache_control); 0: none. Always on a UTF-8 boundary.
  size_t stable_prefix_bytes = 0;
};

struct LlmRequest {
  // Which agent asks: selects provider, model, temperature and max tokens from config.
  std::string agent;
  std::string system;  // the system prompt; may be empty
  std::vector<LlmMessage> messages;
  // Overrides of the agent's config; unset means "as configured".
  std::optional<std::string> model;
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  // Carried into the call record as it is (a task name, a candidate id).
  std::string label;

  // The common case: one user message.
  static LlmRequest user(std::string agent, std::string system, std::string prompt);
};

struct LlmUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

struct LlmResponse {
  LlmStatus status = LlmStatus::kOk;
  std::string text;           // the completion; for kTruncated, the text up to the cut
  std::string error;          // what went wrong, never containing a key; "" when ok
  std::string finish_reason;  // as the provider said it ("stop", "length", "end_turn", ...)
  int http_status = 0;        // of the last attempt; 0 when none or not HTTP
  int attempts = 0;
  LlmUsage usage;
  double cost_usd = 0;
  std::chrono::milliseconds latency{0};  // from the call to its result, retries included
  std::optional<std::chrono::milliseconds> retry_after;  // the server's or the client's advice
  std::string provider;
  std::string model;

  bool ok() const { return status == LlmStatus::kOk; }
  // "rate_limited: HTTP 429: slow down" style, for logs.
  std::string describe() const;
};

}  // namespace kopt
