// The request and response shapes of the HTTP APIs: OpenAI chat completions (and every
// OpenAI-compatible server: vLLM, SGLang, llama.cpp, Ollama) and Anthropic Messages.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "llm/llm_types.h"
#include "llm/secret.h"

namespace kopt {

// A token count the endpoint did not give, or gave as garbage (negative, fractional, text).
inline constexpr int64_t kUnknownTokens = -1;

// What one attempt produced, before retries and accounting.
struct AttemptResult {
  LlmStatus status = LlmStatus::kOk;
  std::string text;
  std::string finish_reason;
  // As the endpoint reported it: kUnknownTokens until a format reads a valid count.
  LlmUsage usage{.input_tokens = kUnknownTokens, .output_tokens = kUnknownTokens};
  int http_status = 0;
  std::string error;  // may contain anything the server said: scrub before reporting
  std::optional<std::chrono::milliseconds> retry_after;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  // The URL path appended to the provider's base_url.
  virtual std::string path() const = 0;
  virtual std::vector<std::string> headers(const Secret& key) const = 0;
  // `request` has model and max_tokens set (LlmService resolves them from the agent config).
  virtual nlohmann::json body(const LlmRequest& request) const = 0;
  // Reads a 2xx response body: the text, the finish reason and the usage; an empty, truncated
  // or oddly shaped body becomes the matching status.
  virtual AttemptResult parse(const nlohmann::json& reply) const = 0;
};

std::unique_ptr<WireFormat> make_openai_format(const ProviderConfig& provider);
std::unique_ptr<WireFormat> make_anthropic_format(const ProviderConfig& provider);
// The format of `provider`: Anthropic's for an anthropic provider, OpenAI's for every other.
std::unique_ptr<WireFormat> make_wire_format(const ProviderConfig& provider);

// The server's own words from an error body ({"error": {"message": ...}} and the variants of
// vLLM, Ollama and FastAPI), else the start of the body as text.
std::string server_error_message(const std::string& body);

// Reads {"prompt_tokens"/"input_tokens", "completion_tokens"/"output_tokens"}: a side with no
// count, or with a count that is negative or not an integer, is kUnknownTokens (billed_usage()
// in accounting.h charges it at the call's bound).
LlmUsage read_usage(const nlohmann::json& usage);

// What one attempt is charged, from what the endpoint reported: a count that is missing,
// negative or not an integer (kUnknownTokens) when the model `answered` is charged at the most
// the attempt could have used, `max_input` and `max_output`; every count is cut to those bounds
// and never below 0, so an endpoint can neither make a budget grow back (negative counts once
// gave a cost of -$2192) nor charge more than the call allowed. An attempt that got no answer
// (an HTTP error, a timeout) is charged what it reported, within the same bounds.
LlmUsage billed_usage(const LlmUsage& reported, bool answered, int64_t max_input,
                      int64_t max_output);

// The status for a completion's text and finish condition: kTruncated when `cut_off`, kEmpty
// when the text is blank, else kOk; fills result.status and result.error.
void classify_completion(AttemptResult& result, bool cut_off);

}  // namespace kopt
