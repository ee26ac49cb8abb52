// One LLM exchange of an agent: render the system prompt and the request, send, keep the usage.
// Shared by the planner, the coder and the summarizer so each of them only says what to ask and
// how to read the answer.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "agents/prompt_library.h"
#include "common/result.h"
#include "src/llm/llm_client.h"

namespace kopt::agents {

// Tokens and cost an agent spent; the orchestrator adds them to the task's and the run's totals.
struct AgentUsage {
  int64_t calls = 0;
  int64_t failed_calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;

  void add(const LlmResponse& response);
  void add(const AgentUsage& other);
};

class AgentCaller {
 public:
  AgentCaller(LlmClient& llm, const PromptLibrary& prompts) : llm_(llm), prompts_(prompts) {}

  // Renders `template_file` with `values` (plus the system prompt with `gpu`), sends it as
  // `agent` and returns the completion. Anything but a complete answer is an error that says
  // why ("truncated at the token limit", "rate_limited: HTTP 429 ...").
  Result<std::string> ask(const std::string& agent, const std::string& template_file,
                          const std::map<std::string, std::string>& values,
                          const std::string& label, AgentUsage& usage);

  const PromptLibrary& prompts() const { return prompts_; }
  LlmClient& llm() { return llm_; }

 private:
  LlmClient& llm_;
  const PromptLibrary& prompts_;
};

}  // namespace kopt::agents
