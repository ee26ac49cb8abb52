// OpenAI chat completions: POST {base_url}/chat/completions with a Bearer key.
#include "common/utf8.h"
#include "llm/wire_format.h"

namespace kopt {

using nlohmann::json;

namespace {

// A message without text that says why: a refusal, or tool calls although none were offered
// (both come as content null). Fills `result` and returns true for those.
bool no_text_reason(const json& message, AttemptResult& result) {
  bool blank =
      !message.contains("content") || !message["content"].is_string() ||
      message["content"].get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank) return false;
  if (message.contains("refusal") && message["refusal"].is_string()) {
    result.status = LlmStatus::kRefused;
    result.error = "the model refused: " + clip_utf8(message["refusal"].get<std::string>(), 200);
    return true;
  }
  if (message.contains("tool_calls") && message["tool_calls"].is_array() &&
      !message["tool_calls"].empty()) {
    const json& call = message["tool_calls"][0];
    std::string name = call.contains("function") && call["function"].is_object()
                           ? call["function"].value("name", "?")
                           : "?";
    result.status = LlmStatus::kToolCall;
    result.error = "the model called a tool (" + name + ") instead of answering in text";
    return true;
  }
  return false;
}

class OpenAiFormat : public WireFormat {
 public:
  explicit OpenAiFormat(const ProviderConfig& provider)
      : max_tokens_field_(provider.max_tokens_field) {}

  std::string path() const override { return "/chat/completions"; }

  std::vector<std::string> headers(const Secret& key) const override {
    std::vector<std::string> h = {"Content-Type: application/json"};
    if (!key.empty()) h.push_back("Authorization: Bearer " + key.reveal());
    return h;
  }

  json body(const LlmRequest& request) const override {
    json messages = json::array();
    if (!request.system.empty())
      messages.push_back({{"role", "system"}, {"content", request.system}});
    for (const auto& m : request.messages) {
      messages.push_back({{"role", m.role == LlmMessage::Role::kUser ? "user" : "assistant"},
                          {"content", m.content}});
    }
    json body = {{"model", request.model.value_or("")}, {"messages", messages}, {"stream", false}};
    body[max_tokens_field_] = request.max_tokens.value_or(4096);
    if (request.temperature) body["temperature"] = *request.temperature;
    return body;
  }

  AttemptResult parse(const json& reply) const override {
    AttemptResult result;
    if (!reply.is_object() || !reply.contains("choices") || !reply["choices"].is_array()) {
      result.status = LlmStatus::kMalformed;
      result.error = "the response has no 'choices' array";
      return result;
    }
    if (reply.contains("usage")) result.usage = read_usage(reply["usage"]);
    const json& choices = reply["choices"];
    if (choices.empty()) {
      result.status = LlmStatus::kEmpty;
      result.error = "the response has no choices";
      return result;
    }
    const json& choice = choices[0];
    if (!choice.is_object()) {
      result.status = LlmStatus::kMalformed;
      result.error = "choices[0] is not an object";
      return result;
    }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      result.finish_reason = choice["finish_reason"].get<std::string>();
    if (choice.contains("message") && choice["message"].is_object()) {
      const json& message = choice["message"];
      if (message.contains("content") && message["content"].is_string())
        result.text = message["content"].get<std::string>();
      if (no_text_reason(message, result)) return result;
    } else if (choice.contains("text") && choice["text"].is_string()) {
      result.text = choice["text"].get<std::string>();  // legacy completions shape
    } else {
      result.status = LlmStatus::kMalformed;
      result.error = "choices[0] has no message";
      return result;
    }
    classify_completion(result, result.finish_reason == "length");
    return result;
  }

 private:
  std::string max_tokens_field_;
};

}  // namespace

std::unique_ptr<WireFormat> make_openai_format(const ProviderConfig& provider) {
  return std::make_unique<OpenAiFormat>(provider);
}

}  // namespace kopt
