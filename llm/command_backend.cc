// The command provider: runs a local program per request. It gets the request as one JSON
// object on stdin, {"format": 1, "agent", "model", "system", "messages": [{"role", "content"}],
// "temperature", "max_tokens", "label"}, and writes the completion to stdout: the plain text, or
// with "output": "json" an object {"text", "finish_reason", "usage": {"input_tokens",
// "output_tokens"}}. A non-zero exit is a server error (retried); stderr's end is reported.
#include "common/json_limits.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/utf8.h"
#include "llm/provider_backend.h"

namespace kopt {

using nlohmann::json;

namespace {

constexpr int kCommandProtocolVersion = 1;

std::string tail(const std::string& text, size_t n) {
  std::string t = trim(text);
  return t.size() <= n ? valid_utf8(t) : "..." + valid_utf8(utf8_suffix(t, n));
}

json request_json(const LlmRequest& request) {
  json messages = json::array();
  for (const auto& m : request.messages) {
    messages.push_back({{"role", m.role == LlmMessage::Role::kUser ? "user" : "assistant"},
                        {"content", m.content}});
  }
  json r = {{"format", kCommandProtocolVersion},
            {"agent", request.agent},
            {"model", request.model.value_or("")},
            {"system", request.system},
            {"messages", messages},
            {"max_tokens", request.max_tokens.value_or(4096)},
            {"label", request.label}};
  if (request.temperature) r["temperature"] = *request.temperature;
  return r;
}

AttemptResult parse_json_output(const std::string& out) {
  AttemptResult result;
  json reply = parse_json_bounded(out);
  if (!reply.is_object() || !reply.contains("text") || !reply["text"].is_string()) {
    result.status = LlmStatus::kMalformed;
    result.error = "the command's output is not {\"text\": ...}: " + tail(out, 300);
    return result;
  }
  result.text = reply["text"].get<std::string>();
  if (reply.contains("finish_reason") && reply["finish_reason"].is_string())
    result.finish_reason = reply["finish_reason"].get<std::string>();
  if (reply.contains("usage")) result.usage = read_usage(reply["usage"]);
  classify_completion(result,
                      result.finish_reason == "length" || result.finish_reason == "max_tokens");
  return result;
}

class CommandBackend : public ProviderBackend {
 public:
  CommandBackend(const ProviderConfig& provider, size_t max_response_bytes)
      : provider_(provider), max_response_bytes_(max_response_bytes) {}

  AttemptResult attempt(const LlmRequest& request, const std::atomic<bool>&) override {
    AttemptResult result;
    auto run = run_command(provider_.command, dump_json(request_json(request)), provider_.timeout);
    if (!run) {
      // The program is missing or cannot be started: like an unknown model, retrying won't help.
      result.status = LlmStatus::kNotFound;
      result.error = run.error();
      return result;
    }
    if (run->timed_out) {
      result.status = LlmStatus::kTimeout;
      result.error =
          "the command did not finish within " + std::to_string(provider_.timeout.count()) + " ms";
      return result;
    }
    if (run->exit_code != 0) {
      result.status = LlmStatus::kServerError;
      result.error = "the command failed (" +
                     (run->exit_code < 0 ? std::string("killed by a signal")
                                         : "exit " + std::to_string(run->exit_code)) +
                     ")" +
                     (trim(run->stderr_text).empty() ? "" : ": " + tail(run->stderr_text, 300));
      return result;
    }
    if (run->stdout_text.size() > max_response_bytes_) {
      result.status = LlmStatus::kTooLarge;
      result.error = "the command wrote " + std::to_string(run->stdout_text.size()) +
                     " bytes, more than " + std::to_string(max_response_bytes_);
      return result;
    }
    if (provider_.command_output_json) return parse_json_output(run->stdout_text);
    result.text = std::move(run->stdout_text);
    result.finish_reason = "stop";
    classify_completion(result, false);
    return result;
  }

 private:
  ProviderConfig provider_;
  size_t max_response_bytes_;
};

}  // namespace

std::unique_ptr<ProviderBackend> make_command_backend(const ProviderConfig& provider,
                                                      size_t max_response_bytes) {
  return std::make_unique<CommandBackend>(provider, max_response_bytes);
}

}  // namespace kopt
