// A test double for the LLM behind the LlmClient interface: answers each agent from its own
// queue of scripted replies (or a default), records every request, and can charge a price per
// call so that cost budgets can be exercised without an HTTP server.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "llm/llm_client.h"

namespace kopt::testing {

class ScriptedLlm final : public LlmClient {
 public:
  // Queues a completion for `agent` ("planner", "coder", "summarizer").
  void reply(const std::string& agent, std::string text);
  void fail(const std::string& agent, LlmStatus status, std::string error = "scripted failure");
  // What `agent` gets when its queue is empty (default: an empty-response failure).
  void set_default(const std::string& agent, std::string text);
  void set_cost_per_call(double usd) { cost_per_call_ = usd; }
  // What agent_limits() says for `agent` (default: nothing, as a client that does not know).
  void set_limits(const std::string& agent, AgentLimits limits);
  std::optional<AgentLimits> agent_limits(const std::string& agent) const override;

  LlmResponse complete(const LlmRequest& request) override;

  std::vector<LlmRequest> requests() const;
  // The user prompts sent by `agent`, in order.
  std::vector<std::string> prompts(const std::string& agent) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::deque<LlmResponse>> queues_;
  std::map<std::string, std::string> defaults_;
  std::map<std::string, AgentLimits> limits_;
  std::vector<LlmRequest> requests_;
  double cost_per_call_ = 0;
};

}  // namespace kopt::testing
