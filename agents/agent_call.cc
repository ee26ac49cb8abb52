#include "agents/agent_call.h"

#include <spdlog/spdlog.h>

namespace kopt::agents {

void AgentUsage::add(const LlmResponse& response) {
  ++calls;
  if (!response.ok()) ++failed_calls;
  input_tokens += response.usage.input_tokens;
  output_tokens += response.usage.output_tokens;
  cost_usd += response.cost_usd;
}

void AgentUsage::add(const AgentUsage& other) {
  calls += other.calls;
  failed_calls += other.failed_calls;
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cost_usd += other.cost_usd;
}

Result<std::string> AgentCaller::ask(const std::string& agent, const std::string& template_file,
                                     const std::map<std::string, std::string>& values,
                                     const std::string& label, AgentUsage& usage) {
  auto gpu = values.find("gpu");
  std::string system = prompts_.get("system.txt").render(
      {{"gpu", gpu == values.end() ? std::string("an NVIDIA GPU") : gpu->second}});
  LlmRequest request =
      LlmRequest::user(agent, std::move(system), prompts_.get(template_file).render(values));
  request.label = label;
  LlmResponse response = llm_.complete(request);
  usage.add(response);
  spdlog::debug("[{}] {} answered {} ({} + {} tokens, {:.1f} s)", label, agent,
                llm_status_name(response.status), response.usage.input_tokens,
                response.usage.output_tokens, response.latency.count() / 1000.0);
  if (response.status == LlmStatus::kTruncated) {
    return make_error(agent + ": the answer was cut off at the token limit (" +
                      std::to_string(response.usage.output_tokens) + " tokens)");
  }
  if (!response.ok()) return make_error(agent + ": " + response.describe());
  return std::move(response.text);
}

}  // namespace kopt::agents
