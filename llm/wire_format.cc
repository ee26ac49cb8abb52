// What both HTTP formats share: error bodies, usage, and the empty/cut-off rules.
#include "llm/wire_format.h"

#include <algorithm>

#include "common/json_limits.h"
#include "common/strings.h"
#include "common/utf8.h"

namespace kopt {

using nlohmann::json;

namespace {
constexpr size_t kMaxErrorText = 500;

std::string clip(const std::string& text) { return clip_utf8(text, kMaxErrorText); }

// The sum of the counts under `keys` that are present; kUnknownTokens when none is, or when one
// is not a non-negative integer (an endpoint's -1e9 must not lower a budget).
int64_t token_count(const json& usage, std::initializer_list<const char*> keys) {
  constexpr int64_t kMostTokens = int64_t{1} << 40;  // no sum of these can overflow
  int64_t total = 0;
  bool seen = false;
  for (const char* key : keys) {
    if (!usage.contains(key) || usage[key].is_null()) continue;
    const json& count = usage[key];
    if (!count.is_number_integer() || count.get<int64_t>() < 0 ||
        count.get<int64_t>() > kMostTokens)
      return kUnknownTokens;
    total += count.get<int64_t>();
    seen = true;
  }
  return seen ? total : kUnknownTokens;
}
}  // namespace

std::string server_error_message(const std::string& body) {
  json reply = parse_json_bounded(body);
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
  LlmUsage u{.input_tokens = kUnknownTokens, .output_tokens = kUnknownTokens};
  if (!usage.is_object()) return u;
  // Anthropic reports cached prompt tokens separately from input_tokens; all are billed input.
  u.input_tokens = token_count(usage, {"prompt_tokens", "input_tokens",
                                       "cache_creation_input_tokens", "cache_read_input_tokens"});
  u.output_tokens = token_count(usage, {"completion_tokens", "output_tokens"});
  return u;
}

LlmUsage billed_usage(const LlmUsage& reported, bool answered, int64_t max_input,
                      int64_t max_output) {
  auto bill = [answered](int64_t count, int64_t most) {
    if (count < 0) return answered ? most : 0;
    return std::min(count, most);
  };
  return LlmUsage{.input_tokens = bill(reported.input_tokens, std::max<int64_t>(max_input, 0)),
                  .output_tokens = bill(reported.output_tokens, std::max<int64_t>(max_output, 0))};
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

std::unique_ptr<WireFormat> make_wire_format(const ProviderConfig& provider) {
  return provider.type == ProviderType::kAnthropic ? make_anthropic_format(provider)
                                                   : make_openai_format(provider);
}

}  // namespace kopt
