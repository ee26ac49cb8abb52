// The LLM client the daemon uses: built from the llm config section, it sends each agent's
// requests to that agent's provider with its model, temperature and max tokens, and keeps the
// accounting of every call.
#pragma once

#include <map>
#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "llm/accounting.h"
#include "llm/llm_client.h"
#include "llm/provider_client.h"

namespace kopt {

class LlmService : public LlmClient {
 public:
  // Reads each provider's key from its environment variable; fails, naming the variable and
  // never a value, when one is unset. `sink` (may be null) gets every call record and must
  // outlive the service.
  static Result<std::unique_ptr<LlmService>> create(const LlmConfig& config,
                                                    LlmCallSink* sink = nullptr);
  ~LlmService() override;

  // Unset model, temperature and max_tokens come from the agent's config; an unknown agent is
  // a kBadRequest response.
  LlmResponse complete(const LlmRequest& request) override;
  std::future<LlmResponse> submit(LlmRequest request) override;
  // Of the agent's provider; an unknown agent is unavailable for good.
  LlmAvailability availability(const std::string& agent) const override;
  // From the agent's config (max_tokens_ceiling and max_temperature with their defaults).
  std::optional<AgentLimits> agent_limits(const std::string& agent) const override;

  // Ends every wait and transfer: calls under way return kCancelled soon, later ones at once.
  void shutdown();

  LlmTotals totals() const { return accounting_->totals(); }
  LlmTotals totals_for_agent(const std::string& agent) const {
    return accounting_->totals_for_agent(agent);
  }
  // The provider client by provider name (for tests and the status display), or nullptr.
  ProviderClient* provider(const std::string& name) const;

 private:
  LlmService(LlmConfig config, std::unique_ptr<LlmAccounting> accounting);
  // The provider for the agent, with the agent's defaults filled into `request`; nullptr and
  // an error for an unknown agent.
  ProviderClient* route(LlmRequest& request, std::string& error) const;

  LlmConfig config_;
  std::unique_ptr<LlmAccounting> accounting_;
  std::map<std::string, std::unique_ptr<ProviderClient>> providers_;  // by provider name
};

}  // namespace kopt
