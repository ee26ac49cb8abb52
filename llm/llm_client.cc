#include "llm/llm_client.h"

namespace kopt {

std::future<LlmResponse> LlmClient::submit(LlmRequest request) {
  return std::async(std::launch::async,
                    [this, request = std::move(request)] { return complete(request); });
}

LlmAvailability LlmClient::availability(const std::string&) const { return {}; }

std::optional<AgentLimits> LlmClient::agent_limits(const std::string&) const {
  return std::nullopt;
}

}  // namespace kopt
