#include "agents/agent_call.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>

#include "agents/agent_context.h"
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
  add_call(response.status, response.usage.input_tokens, response.usage.output_tokens,
           response.cost_usd);
}

void AgentUsage::add(const AgentUsage& other) {
  LlmTotals::add(other);
  ceiling_hits += other.ceiling_hits;
  model_failures += other.model_failures;
}

namespace {

// About 3.5 characters a token for English and CUDA with common tokenizers; 3 errs on the side
// of a prompt counted longer than it is, so the clamped answer still fits.
constexpr int kCharsPerToken = 3;

int estimated_tokens(const std::string& text) {
  return static_cast<int>(text.size() / kCharsPerToken) + 1;
}

int estimated_tokens(const LlmRequest& request) {
  int tokens = estimated_tokens(request.system);
  for (const auto& m : request.messages) tokens += estimated_tokens(m.content) + 4;
  return tokens;
}

}  // namespace

Result<std::optional<int>> AgentCaller::answer_room(const std::string& agent,
                                                    const LlmRequest& request) const {
  auto limits = llm_.agent_limits(agent);
  if (!limits || !limits->context_tokens) return std::optional<int>{};
  int prompt = estimated_tokens(request);
  int room = *limits->context_tokens - prompt - kContextMargin;
  if (room < kMinAnswerTokens) {
    return make_error(fmt::format(
        "{}: the prompt (about {} tokens) leaves no room for an answer in the context of {} "
        "tokens (llm.agents.{}.context_tokens)",
        agent, prompt, *limits->context_tokens, agent));
  }
  return std::optional<int>{room};
}

LlmRequest AgentCaller::render_request(const std::string& agent, const std::string& template_file,
                                       const std::map<std::string, std::string>& values) const {
  auto gpu = values.find("gpu");
  std::string system =
      prompts_.get("system.txt")
          .render({{"gpu", gpu == values.end() ? std::string("an NVIDIA GPU") : gpu->second}});
  // A prompt quotes compile logs, verdict details and stored lessons: no key is ever sent.
  PromptTemplate::Rendered prompt = prompts_.get(template_file).render_marked(values);
  LlmRequest request = LlmRequest::user(agent, scrub_secrets(system), scrub_secrets(prompt.text));
  // The prefix is the task's contract and format, which hold no key, so scrubbing left it as it
  // was; were it changed, no marker is better than one in the wrong place.
  if (request.messages.back().content.compare(0, prompt.stable_prefix_bytes, prompt.text, 0,
                                              prompt.stable_prefix_bytes) == 0) {
    request.messages.back().stable_prefix_bytes = prompt.stable_prefix_bytes;
  }
  return request;
}

Result<LlmRequest> AgentCaller::prepare(const std::string& agent, const std::string& template_file,
                                        std::map<std::string, std::string> values,
                                        const std::string& label, const AskOptions& options,
                                        std::optional<int>& room) const {
  LlmRequest request = render_request(agent, template_file, values);
  auto fits = answer_room(agent, request);
  // What is worth least goes first; the kernel is cut last, and only as much as needed.
  for (const char* name : kTrimOrder) {
    if (fits) break;
    auto value = values.find(name);
    if (value == values.end() || value->second == kLeftOut) continue;
    spdlog::info("[{}] {}: the prompt does not fit the model's context; {} left out", label, agent,
                 name);
    value->second = kLeftOut;
    request = render_request(agent, template_file, values);
    fits = answer_room(agent, request);
  }
  for (const char* name : {"current_kernel", "candidate_kernel"}) {
    auto value = values.find(name);
    if (fits || value == values.end()) continue;
    auto limits = llm_.agent_limits(agent);
    if (!limits || !limits->context_tokens) break;
    // The characters to cut: what the prompt holds past answer_room()'s limit.
    int64_t over = int64_t(estimated_tokens(request) + kContextMargin + kMinAnswerTokens -
                           *limits->context_tokens) *
                   kCharsPerToken;
    if (over <= 0 || size_t(over) + 100 >= value->second.size()) continue;
    spdlog::info("[{}] {}: the prompt does not fit the model's context; {} cut by {} characters",
                 label, agent, name, over);
    value->second = shorten(value->second, value->second.size() - size_t(over) - 100);
    request = render_request(agent, template_file, values);
    fits = answer_room(agent, request);
  }
  if (!fits) return make_error(fits.error());
  room = *fits;
  request.label = label;
  request.temperature = options.temperature;
  // max_tokens is clamped to what the prompt leaves of the model's context: prompt + answer
  // over the context is a 400, which no retry mends.
  auto limits = llm_.agent_limits(agent);
  int configured = limits ? limits->max_tokens : 4096;
  if (room && *room < configured) request.max_tokens = *room;
  return request;
}

Result<std::string> AgentCaller::ask(const std::string& agent, const std::string& template_file,
                                     const std::map<std::string, std::string>& values,
                                     const std::string& label, AgentUsage& usage,
                                     const AskOptions& options) {
  std::optional<int> room;
  auto prepared = prepare(agent, template_file, values, label, options, room);
  if (!prepared) return make_error(prepared.error());
  LlmRequest& request = *prepared;
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
    return retry_truncated(agent, label, request, room.value_or(INT_MAX), usage, send);
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
