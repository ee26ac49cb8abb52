// openai and anthropic providers: a wire format over http_post, with HTTP statuses mapped to
// the failure classes the retry loop understands.
#include "common/json_limits.h"
#include "llm/http_transport.h"
#include "llm/provider_backend.h"

namespace kopt {

using nlohmann::json;

namespace {

LlmStatus status_for_http(long code) {
  if (code == 429) return LlmStatus::kRateLimited;
  if (code == 408) return LlmStatus::kTimeout;
  if (code >= 500) return LlmStatus::kServerError;  // 529 "overloaded" included
  if (code == 401 || code == 403) return LlmStatus::kAuth;
  if (code == 404) return LlmStatus::kNotFound;
  if (code >= 400) return LlmStatus::kBadRequest;
  return LlmStatus::kMalformed;  // 1xx/3xx: nothing an API should answer to a POST
}

LlmStatus status_for_outcome(HttpReply::Outcome outcome) {
  switch (outcome) {
    case HttpReply::Outcome::kTimeout:
      return LlmStatus::kTimeout;
    case HttpReply::Outcome::kTooLarge:
      return LlmStatus::kTooLarge;
    case HttpReply::Outcome::kCancelled:
      return LlmStatus::kCancelled;
    case HttpReply::Outcome::kInvalid:
      return LlmStatus::kBadRequest;
    default:
      return LlmStatus::kConnection;
  }
}

class HttpBackend : public ProviderBackend {
 public:
  HttpBackend(const ProviderConfig& provider, size_t max_response_bytes, Secret key)
      : provider_(provider),
        max_response_bytes_(max_response_bytes),
        key_(std::move(key)),
        format_(make_wire_format(provider)) {}

  AttemptResult attempt(const LlmRequest& request, const std::atomic<bool>& cancel) override {
    HttpPost post;
    post.url = provider_.base_url + format_->path();
    post.headers = format_->headers(key_);
    post.body = dump_json(format_->body(request));  // never throws on a cut character
    post.connect_timeout = provider_.connect_timeout;
    post.timeout = provider_.timeout;
    post.max_response_bytes = max_response_bytes_;
    post.cancel = &cancel;
    HttpReply reply = http_post(post);

    AttemptResult result;
    result.http_status = static_cast<int>(reply.status);
    result.retry_after = reply.retry_after;
    if (reply.outcome != HttpReply::Outcome::kResponse) {
      result.status = status_for_outcome(reply.outcome);
      result.error = reply.error;
      return result;
    }
    if (reply.status < 200 || reply.status >= 300) {
      result.status = status_for_http(reply.status);
      result.error = server_error_message(reply.body);
      return result;
    }
    json body = parse_json_bounded(reply.body);
    if (body.is_discarded()) {
      result.status = LlmStatus::kMalformed;
      result.error = "the response is not JSON: " + server_error_message(reply.body);
      return result;
    }
    AttemptResult parsed = format_->parse(body);
    parsed.http_status = result.http_status;
    return parsed;
  }

 private:
  ProviderConfig provider_;
  size_t max_response_bytes_;
  Secret key_;
  std::unique_ptr<WireFormat> format_;
};

}  // namespace

std::unique_ptr<ProviderBackend> make_http_backend(const ProviderConfig& provider,
                                                   size_t max_response_bytes, Secret key) {
  return std::make_unique<HttpBackend>(provider, max_response_bytes, std::move(key));
}

}  // namespace kopt
