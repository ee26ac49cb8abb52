#include "tests/agents/scripted_llm.h"

namespace kopt::testing {

void ScriptedLlm::reply(const std::string& agent, std::string text) {
  std::lock_guard lock(mutex_);
  LlmResponse response;
  response.text = std::move(text);
  queues_[agent].push_back(std::move(response));
}

void ScriptedLlm::fail(const std::string& agent, LlmStatus status, std::string error) {
  std::lock_guard lock(mutex_);
  LlmResponse response;
  response.status = status;
  response.error = std::move(error);
  queues_[agent].push_back(std::move(response));
}

void ScriptedLlm::set_default(const std::string& agent, std::string text) {
  std::lock_guard lock(mutex_);
  defaults_[agent] = std::move(text);
}

LlmResponse ScriptedLlm::complete(const LlmRequest& request) {
  std::lock_guard lock(mutex_);
  requests_.push_back(request);
  LlmResponse response;
  auto& queue = queues_[request.agent];
  if (!queue.empty()) {
    response = std::move(queue.front());
    queue.pop_front();
  } else if (auto it = defaults_.find(request.agent); it != defaults_.end()) {
    response.text = it->second;
  } else {
    response.status = LlmStatus::kEmpty;
    response.error = "no scripted reply for " + request.agent;
  }
  response.usage = {1000, 200};
  response.cost_usd = cost_per_call_;
  response.attempts = 1;
  response.model = "scripted";
  response.provider = "scripted";
  return response;
}

void ScriptedLlm::set_limits(const std::string& agent, AgentLimits limits) {
  std::lock_guard lock(mutex_);
  limits_[agent] = limits;
}

std::optional<AgentLimits> ScriptedLlm::agent_limits(const std::string& agent) const {
  std::lock_guard lock(mutex_);
  auto it = limits_.find(agent);
  if (it == limits_.end()) return std::nullopt;
  return it->second;
}

std::vector<LlmRequest> ScriptedLlm::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::vector<std::string> ScriptedLlm::prompts(const std::string& agent) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& r : requests_) {
    if (r.agent == agent && !r.messages.empty()) out.push_back(r.messages.back().content);
  }
  return out;
}

}  // namespace kopt::testing
