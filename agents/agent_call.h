// One LLM exchange of an agent: render the system prompt and the request, send, keep the usage.
// Shared by the planner, the coder and the summarizer so each of them only says what to ask and
// how to read the answer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agents/prompt_library.h"
#include "common/result.h"
#include "llm/accounting.h"
#include "llm/llm_client.h"

namespace kopt::agents {

// Tokens, cost and how the calls ended (the calls' totals, as the LLM's accounting keeps them),
// and what only an agent sees; the orchestrator adds them to the task's and the run's totals.
struct AgentUsage : LlmTotals {
  int64_t ceiling_hits = 0;    // cut again at the agent's max_tokens_ceiling
  int64_t model_failures = 0;  // asks that failed even after the nudge: the model's fault

  void add(const LlmResponse& response);
  void add(const AgentUsage& other);
};

// One request and its answer, as the model saw and said them (for the memory's transcripts).
struct Transcript {
  std::string agent;
  std::string label;          // the task
  std::string template_file;  // "planner.txt"
  std::string system;
  std::string prompt;
  std::string answer;  // the completion's text ("" when it failed)
  std::string status;  // llm_status_name()
};
using TranscriptSink = std::function<void(const Transcript&)>;

// How one ask differs from the agent's config.
struct AskOptions {
  std::optional<double> temperature;  // a hotter one while the model repeats itself
};

class AgentCaller {
 public:
  AgentCaller(LlmClient& llm, const PromptLibrary& prompts) : llm_(llm), prompts_(prompts) {}

  // Renders `template_file` with `values` (plus the system prompt with `gpu`), sends it as
  // `agent` and returns the completion. Anything but a complete answer is an error that says
  // why ("truncated at the token limit", "rate_limited: HTTP 429 ...").
  //
  // A model that stalls gets one second chance per ask, never more: an answer cut at the token
  // limit is asked for again with twice the limit (up to the agent's ceiling, for this ask
  // only), or at the ceiling without commentary; a refusal, a tool call or an empty answer is
  // asked for again with a nudge saying what was wrong. Where the agent's context_tokens is
  // known, max_tokens (and its raise) is clamped to what the prompt leaves of the context, and a
  // prompt that leaves too little is trimmed in a stated order (kTrimOrder): memory's examples
  // and warnings first, then its technique cards (denser, so kept longer), then the plans tried,
  // the earlier answers, the other kernels and the tuner's facts, the counters, and last the kernel
  // itself, cut in its middle.
  Result<std::string> ask(const std::string& agent, const std::string& template_file,
                          const std::map<std::string, std::string>& values,
                          const std::string& label, AgentUsage& usage,
                          const AskOptions& options = {});

  // The values a prompt leaves out, in this order, when it does not fit the agent's context.
  static constexpr const char* kTrimOrder[] = {
      "memory_examples", "memory_warnings",  "technique_cards", "tried_plans",
      "earlier_answers", "earlier_attempts", "beam_summary",    "tuner_facts",
      "where_time_goes", "slow_profile",     "fast_profile"};
  static constexpr const char* kLeftOut = "(left out: the prompt had to fit the model's context)";
  const PromptLibrary& prompts() const { return prompts_; }
  // Receives every request sent and its answer; set before the first ask.
  void set_transcript_sink(TranscriptSink sink) { transcript_sink_ = std::move(sink); }
  LlmClient& llm() { return llm_; }

 private:
  LlmClient& llm_;
  const PromptLibrary& prompts_;
  // Tokens of the agent's context the request leaves for the answer; nothing when the context
  // is unknown; an error when the prompt alone fills it.
  Result<std::optional<int>> answer_room(const std::string& agent, const LlmRequest& request) const;
  // The request of one ask: the system prompt and `template_file` rendered, trimmed to the
  // agent's context (see ask()), max_tokens clamped to what the prompt leaves.
  Result<LlmRequest> prepare(const std::string& agent, const std::string& template_file,
                             std::map<std::string, std::string> values, const std::string& label,
                             const AskOptions& options, std::optional<int>& room) const;
  LlmRequest render_request(const std::string& agent, const std::string& template_file,
                            const std::map<std::string, std::string>& values) const;
  // The second chance of an answer cut at the token limit.
  Result<std::string> retry_truncated(const std::string& agent, const std::string& label,
                                      LlmRequest& request, int room, AgentUsage& usage,
                                      const std::function<LlmResponse()>& send);

  static constexpr int kContextMargin = 64;     // chat template tokens around the messages
  static constexpr int kMinAnswerTokens = 512;  // less than this is no room for a kernel
  TranscriptSink transcript_sink_;
};

}  // namespace kopt::agents
