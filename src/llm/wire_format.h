// The request and response shapes of the HTTP APIs: OpenAI chat completions (and every
// OpenAI-compatible server: vLLM, SGLang, llama.cpp, Ollama) and Anthropic Messages.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/llm/llm_types.h"
#include "src/llm/secret.h"

namespace kopt {

// What one attempt produced, before retries and accounting.
struct AttemptResult {
  LlmStatus status = LlmStatus::kOk;
  std::string text;
  std::string finish_reason;
  LlmUsage usage;
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

// The server's own words from an error body ({"error": {"message": ...}} and the variants of
// vLLM, Ollama and FastAPI), else the start of the body as text.
std::string server_error_message(const std::string& body);

// Reads {"prompt_tokens"/"input_tokens", "completion_tokens"/"output_tokens"} leniently.
LlmUsage read_usage(const nlohmann::json& usage);

// The status for a completion's text and finish condition: kTruncated when `cut_off`, kEmpty
// when the text is blank, else kOk; fills result.status and result.error.
void classify_completion(AttemptResult& result, bool cut_off);

}  // namespace kopt
