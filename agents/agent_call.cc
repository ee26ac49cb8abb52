#include "agents/agent_call.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>

#include "common/enum_names.h"
#include "common/scrub_secrets.h"

namespace kopt::agents {

namespace {

const char* kWithoutCommentary =
    "\n\nNote: your previous answer to this request was cut off at the token limit. Answer "
    "again with only what was asked for (the code or JSON block), without any explanation.";

// What a model did instead of answering, for the log and the error; "" when it answered.
constexpr EnumNameTable<LlmStatus, 3> kMisbehaviours = {{
    {LlmStatus::kRefused, "refused"},
    {LlmStatus::kToolCall, "called a tool"},
    {LlmStatus::kEmpty, "answered with nothing"},
}};

const char* misbehaviour(LlmStatus status) { return enum_name(kMisbehaviours, status, ""); }

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
  add_call(response.ok(), response.usage.input_tokens, response.usage.output_tokens,
           response.cost_usd);
  truncated += response.status == LlmStatus::kTruncated;
  refused += response.status == LlmStatus::kRefused;
  tool_calls += response.status == LlmStatus::kToolCall;
  empty += response.status == LlmStatus::kEmpty;
}

void AgentUsage::add(const AgentUsage& other) {
  LlmTotals::add(other);
  truncated += other.truncated;
  refused += other.refused;
  tool_calls += other.tool_calls;
  empty += other.empty;
  ceiling_hits += other.ceiling_hits;
  model_failures += other.model_failures;
}

namespace {

int estimated_tokens(const std::string& text) {
  // About 3.5 characters a token for English and CUDA with common tokenizers; 3 errs on the
  // side of a prompt counted longer than it is, so the clamped answer still fits.
  return static_cast<int>(text.size() / 3) + 1;
}

}  // namespace

Result<std::optional<int>> AgentCaller::answer_room(const std::string& agent,
                                                    const LlmRequest& request) const {
  auto limits = llm_.agent_limits(agent);
  if (!limits || !limits->context_tokens) return std::optional<int>{};
  int prompt = estimated_tokens(request.system);
  for (const auto& m : request.messages) prompt += estimated_tokens(m.content) + 4;
  int room = *limits->context_tokens - prompt - kContextMargin;
  if (room < kMinAnswerTokens) {
    return make_error(fmt::format(
        "{}: the prompt (about {} tokens) leaves no room for an answer in the context of {} "
        "tokens (llm.agents.{}.context_tokens)",
        agent, prompt, *limits->context_tokens, agent));
  }
  return std::optional<int>{room};
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
  // max_tokens is clamped to what the prompt leaves of the model's context: prompt + answer
  // over the context is a 400, which no retry mends.
  auto room = answer_room(agent, request);
  if (!room) return make_error(room.error());
  auto limits = llm_.agent_limits(agent);
  int configured = limits ? limits->max_tokens : 4096;
  if (*room && **room < configured) request.max_tokens = **room;
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
    return retry_truncated(agent, label, request, room->value_or(INT_MAX), usage, send);
  }
  if (*misbehaviour(response.status)) {
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

Result<std::string> AgentCaller::retry_truncated(const std::string& agent, const std::string& label,
                                                 LlmRequest& request, int room, AgentUsage& usage,
                                                 const std::function<LlmResponse()>& send) {
  auto limits = llm_.agent_limits(agent);
  int used = request.max_tokens.value_or(limits ? limits->max_tokens : 4096);
  // The ceiling within what the context leaves: the raise is for this ask only, so one long
  // answer does not double every later call of the agent.
  int ceiling = std::min(room, limits ? std::max(used, limits->max_tokens_ceiling) : used);
  if (used < ceiling) {
    int larger = std::min(ceiling, used * 2);
    spdlog::info(
        "[{}] {}: the answer was cut at {} tokens; asking again with max_tokens {} "
        "(ceiling {})",
        label, agent, used, larger, ceiling);
    request.max_tokens = larger;
  } else {
    spdlog::info(
        "[{}] {}: the answer was cut at the ceiling of {} tokens; asking again for "
        "the block alone",
        label, agent, used);
    request.messages.back().content += kWithoutCommentary;
  }
  LlmResponse response = send();
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
  if (!response.ok()) return make_error(agent + ": " + response.describe());
  return std::move(response.text);
}

}  // namespace kopt::agents
