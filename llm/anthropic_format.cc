// Anthropic Messages: POST {base_url}/v1/messages with x-api-key and anthropic-version.
#include "llm/wire_format.h"

namespace kopt {

using nlohmann::json;

namespace {

class AnthropicFormat : public WireFormat {
 public:
  explicit AnthropicFormat(const ProviderConfig& provider) : version_(provider.anthropic_version) {}

  std::string path() const override { return "/v1/messages"; }

  std::vector<std::string> headers(const Secret& key) const override {
    std::vector<std::string> h = {"Content-Type: application/json",
                                  "anthropic-version: " + version_};
    if (!key.empty()) h.push_back("x-api-key: " + key.reveal());
    return h;
  }

  json body(const LlmRequest& request) const override {
    json messages = json::array();
    for (const auto& m : request.messages) {
      messages.push_back({{"role", m.role == LlmMessage::Role::kUser ? "user" : "assistant"},
                          {"content", content(m)}});
    }
    // max_tokens is required by this API.
    json body = {{"model", request.model.value_or("")},
                 {"max_tokens", request.max_tokens.value_or(4096)},
                 {"messages", messages}};
    if (!request.system.empty()) body["system"] = request.system;
    if (request.temperature) body["temperature"] = *request.temperature;
    return body;
  }

  // A message with a stable prefix becomes two text blocks, the first marked for the prompt
  // cache: later calls of the task read the system prompt and that prefix from the cache.
  static json content(const LlmMessage& m) {
    if (m.stable_prefix_bytes == 0 || m.stable_prefix_bytes >= m.content.size()) return m.content;
    return json::array({{{"type", "text"},
                         {"text", m.content.substr(0, m.stable_prefix_bytes)},
                         {"cache_control", {{"type", "ephemeral"}}}},
                        {{"type", "text"}, {"text", m.content.substr(m.stable_prefix_bytes)}}});
  }

  AttemptResult parse(const json& reply) const override {
    AttemptResult result;
    if (!reply.is_object() || !reply.contains("content") || !reply["content"].is_array()) {
      result.status = LlmStatus::kMalformed;
      result.error = "the response has no 'content' array";
      return result;
    }
    if (reply.contains("usage")) result.usage = read_usage(reply["usage"]);
    if (reply.contains("stop_reason") && reply["stop_reason"].is_string())
      result.finish_reason = reply["stop_reason"].get<std::string>();
    // The text is the concatenation of the text blocks (thinking and tool blocks are skipped).
    for (const json& block : reply["content"]) {
      if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
          block["text"].is_string()) {
        result.text += block["text"].get<std::string>();
      }
    }
    // A refusal is reported with whatever text came with it, never as an empty answer.
    if (result.finish_reason == "refusal") {
      result.status = LlmStatus::kRefused;
      result.error = "the model refused: " + (result.text.empty() ? "(no text)" : result.text);
      return result;
    }
    if (result.text.find_first_not_of(" \t\r\n") == std::string::npos) {
      for (const json& block : reply["content"]) {
        if (block.is_object() && block.value("type", "") == "tool_use") {
          result.status = LlmStatus::kToolCall;
          result.error = "the model called a tool (" + block.value("name", "?") +
                         ") instead of answering in text";
          return result;
        }
      }
    }
    classify_completion(result, result.finish_reason == "max_tokens");
    return result;
  }

 private:
  std::string version_;
};

}  // namespace

std::unique_ptr<WireFormat> make_anthropic_format(const ProviderConfig& provider) {
  return std::make_unique<AnthropicFormat>(provider);
}

}  // namespace kopt
