#include "llm/llm_types.h"

namespace kopt {

const char* llm_status_name(LlmStatus status) {
  switch (status) {
    case LlmStatus::kOk:
      return "ok";
    case LlmStatus::kRateLimited:
      return "rate_limited";
    case LlmStatus::kServerError:
      return "server_error";
    case LlmStatus::kTimeout:
      return "timeout";
    case LlmStatus::kConnection:
      return "connection";
    case LlmStatus::kAuth:
      return "auth";
    case LlmStatus::kBadRequest:
      return "bad_request";
    case LlmStatus::kNotFound:
      return "not_found";
    case LlmStatus::kMalformed:
      return "malformed";
    case LlmStatus::kEmpty:
      return "empty";
    case LlmStatus::kTruncated:
      return "truncated";
    case LlmStatus::kRefused:
      return "refused";
    case LlmStatus::kToolCall:
      return "tool_call";
    case LlmStatus::kTooLarge:
      return "too_large";
    case LlmStatus::kUnavailable:
      return "unavailable";
    case LlmStatus::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

// Overload, outages and network trouble pass; a wrong key, a bad request, an unknown model or
// a response the model chose to write (empty, cut off, malformed, huge) would come back the same.
bool llm_status_retryable(LlmStatus status) {
  switch (status) {
    case LlmStatus::kRateLimited:
    case LlmStatus::kServerError:
    case LlmStatus::kTimeout:
    case LlmStatus::kConnection:
      return true;
    default:
      return false;
  }
}

LlmRequest LlmRequest::user(std::string agent, std::string system, std::string prompt) {
  LlmRequest r;
  r.agent = std::move(agent);
  r.system = std::move(system);
  r.messages.push_back({LlmMessage::Role::kUser, std::move(prompt)});
  return r;
}

std::string LlmResponse::describe() const {
  std::string out = llm_status_name(status);
  if (http_status) out += ": HTTP " + std::to_string(http_status);
  if (!error.empty()) out += ": " + error;
  return out;
}

}  // namespace kopt
