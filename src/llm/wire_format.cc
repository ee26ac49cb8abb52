// What both HTTP formats share: error bodies, usage, and the empty/cut-off rules.
#include "src/llm/wire_format.h"

#include "common/strings.h"

namespace kopt {

using nlohmann::json;

namespace {
constexpr size_t kMaxErrorText = 500;

std::string clip(std::string text) {
  if (text.size() > kMaxErrorText) text = text.substr(0, kMaxErrorText) + "...";
  return text;
}

int64_t token_count(const json& usage, std::initializer_list<const char*> keys) {
  int64_t total = 0;
  for (const char* key : keys) {
    if (usage.contains(key) && usage[key].is_number_integer()) total += usage[key].get<int64_t>();
  }
  return total;
}
}  // namespace

std::string server_error_message(const std::string& body) {
  json reply = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object()) {
    const json* error = reply.contains("error") ? &reply["error"] : nullptr;
    if (error && error->is_object() && error->contains("message") &&
        (*error)["message"].is_string()) {
      return clip((*error)["message"].get<std::string>());
    }
    if (error && error->is_string()) return clip(error->get<std::string>());
    for (const char* key : {"message", "detail"}) {
      if (reply.contains(key) && reply[key].is_string()) return clip(reply[key].get<std::string>());
    }
  }
  std::string text = trim(body);
  return text.empty() ? "(empty body)" : clip(text);
}

LlmUsage read_usage(const json& usage) {
  LlmUsage u;
  if (!usage.is_object()) return u;
  // Anthropic reports cached prompt tokens separately from input_tokens; all are billed input.
  u.input_tokens = token_count(usage, {"prompt_tokens", "input_tokens",
                                       "cache_creation_input_tokens", "cache_read_input_tokens"});
  u.output_tokens = token_count(usage, {"completion_tokens", "output_tokens"});
  return u;
}

void classify_completion(AttemptResult& result, bool cut_off) {
  if (cut_off) {
    result.status = LlmStatus::kTruncated;
    result.error = "the response was cut off by the token limit (finish reason '" +
                   result.finish_reason + "')";
  } else if (trim(result.text).empty()) {
    result.status = LlmStatus::kEmpty;
    result.error = "the response has no text (finish reason '" + result.finish_reason + "')";
  } else {
    result.status = LlmStatus::kOk;
  }
}

}  // namespace kopt
