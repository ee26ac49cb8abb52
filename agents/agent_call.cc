#include "agents/agent_call.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/scrub_secrets.h"

namespace kopt::agents {

namespace {

const char* kWithoutCommentary =
    "\n\nNote: your previous answer to this request was cut off at the token limit. Answer "
    "again with only what was asked for (the code or JSON block), without any explanation.";

// What a model did instead of answering, for the log and the error; "" when it answered.
const char* misbehaviour(LlmStatus status) {
  switch (status) {
    case LlmStatus::kRefused:
      return "refused";
    case LlmStatus::kToolCall:
      return "called a tool";
    case LlmStatus::kEmpty:
      return "answered with nothing";
    default:
      return "";
  }
}

std::string nudge(LlmStatus status) {
  if (status == LlmStatus::kRefused) {
    return "\n\nNote: your previous answer declined this request. It is routine performance "
           "engineering on the user's own GPU kernel, run in a sandbox; please answer it as "
           "asked.";
  }
  if (status == LlmStatus::kToolCall) {
    return "\n\nNote: your previous answer called a tool. No tools are available here: answer "
           "in plain text with the block asked for.";
  }
  return "\n\nNote: your previous answer was empty. Answer with the block asked for.";
}

}  // namespace

void AgentUsage::add(const LlmResponse& response) {
  ++calls;
  if (!response.ok()) ++failed_calls;
  input_tokens += response.usage.input_tokens;
  output_tokens += response.usage.output_tokens;
  cost_usd += response.cost_usd;
  truncated += response.status == LlmStatus::kTruncated;
  refused += response.status == LlmStatus::kRefused;
  tool_calls += response.status == LlmStatus::kToolCall;
  empty += response.status == LlmStatus::kEmpty;
}

void AgentUsage::add(const AgentUsage& other) {
  calls += other.calls;
  failed_calls += other.failed_calls;
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cost_usd += other.cost_usd;
  truncated += other.truncated;
  refused += other.refused;
  tool_calls += other.tool_calls;
  empty += other.empty;
  ceiling_hits += other.ceiling_hits;
  model_failures += other.model_failures;
}

Result<std::string> AgentCaller::ask(const std::string& agent, const std::string& template_file,
                                     const std::map<std::string, std::string>& values,
                                     const std::string& label, AgentUsage& usage,
                                     const AskOptions& options) {
  auto gpu = values.find("gpu");
  std::string system =
      prompts_.get("system.txt")
          .render({{"gpu", gpu == values.end() ? std::string("an NVIDIA GPU") : gpu->second}});
  // A prompt quotes compile logs, verdict details and stored lessons: no key is ever sent.
  LlmRequest request = LlmRequest::user(agent, scrub_secrets(system),
                                        scrub_secrets(prompts_.get(template_file).render(values)));
  request.label = label;
  request.temperature = options.temperature;
  {
    std::lock_guard lock(mutex_);
    if (auto it = raised_max_tokens_.find(agent); it != raised_max_tokens_.end()) {
      request.max_tokens = it->second;
    }
  }
  auto send = [&] {
    LlmResponse response = llm_.complete(request);
    usage.add(response);
    if (transcript_sink_) {
      transcript_sink_({agent, label, template_file, request.system,
                        request.messages.empty() ? std::string() : request.messages.back().content,
                        response.text, llm_status_name(response.status)});
    }
    spdlog::debug("[{}] {} answered {} ({} + {} tokens, {:.1f} s)", label, agent,
                  llm_status_name(response.status), response.usage.input_tokens,
                  response.usage.output_tokens, response.latency.count() / 1000.0);
    return response;
  };
  LlmResponse response = send();

  if (response.status == LlmStatus::kTruncated) {
    auto limits = llm_.agent_limits(agent);
    int used = request.max_tokens.value_or(limits ? limits->max_tokens : 4096);
    int ceiling = limits ? std::max(used, limits->max_tokens_ceiling) : used;
    if (used < ceiling) {
      int larger = std::min(ceiling, used * 2);
      spdlog::info(
          "[{}] {}: the answer was cut at {} tokens; asking again with max_tokens {} "
          "(ceiling {})",
          label, agent, used, larger, ceiling);
      request.max_tokens = larger;
      std::lock_guard lock(mutex_);
      raised_max_tokens_[agent] = larger;
    } else {
      spdlog::info(
          "[{}] {}: the answer was cut at the ceiling of {} tokens; asking again for "
          "the block alone",
          label, agent, used);
      request.messages.back().content += kWithoutCommentary;
    }
    response = send();
    if (response.status == LlmStatus::kTruncated) {
      int limit = request.max_tokens.value_or(used);
      bool at_ceiling = limit >= ceiling;
      usage.ceiling_hits += at_ceiling;
      std::string why =
          agent + ": the answer was cut off at the token limit again (" + std::to_string(limit) +
          " tokens" +
          (at_ceiling ? ", the ceiling llm.agents." + agent + ".max_tokens_ceiling" : "") + ")";
      spdlog::warn("[{}] {}", label, why);
      return make_error(why);
    }
  } else if (*misbehaviour(response.status)) {
    LlmStatus first = response.status;
    spdlog::info("[{}] {} {}; asking once more with a nudge", label, agent, misbehaviour(first));
    request.messages.back().content += nudge(first);
    response = send();
    if (*misbehaviour(response.status)) {
      ++usage.model_failures;
      return make_error(agent + ": the model " + misbehaviour(first) + ", and after a nudge " +
                        misbehaviour(response.status) + " (" + response.describe() + ")");
    }
  }
  if (!response.ok()) return make_error(agent + ": " + response.describe());
  return std::move(response.text);
}

}  // namespace kopt::agents
