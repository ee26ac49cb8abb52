#include "llm/llm_types.h"

#include "common/enum_names.h"

namespace kopt {

constexpr EnumNames<LlmStatus, 16> kStatusNames = {
    {"ok", "rate_limited", "server_error", "timeout", "connection", "auth", "bad_request",
     "not_found", "malformed", "empty", "truncated", "refused", "tool_call", "too_large",
     "unavailable", "cancelled"}};
static_assert(names_each_enumerator(kStatusNames, LlmStatus::kCancelled));

const char* llm_status_name(LlmStatus status) { return enum_name(kStatusNames, status, "unknown"); }

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
