#include "llm/provider_client.h"

#include <spdlog/spdlog.h>

#include "common/scrub_secrets.h"
#include "common/utf8.h"

namespace kopt {

namespace {

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

// Whether the model produced this (and so it costs tokens), as opposed to a transport failure.
bool answered(LlmStatus status) {
  return status == LlmStatus::kOk || status == LlmStatus::kTruncated ||
         status == LlmStatus::kEmpty || status == LlmStatus::kRefused ||
         status == LlmStatus::kToolCall;
}

// The most input tokens a request can cost: no tokenizer makes more tokens than bytes, plus
// room for the chat template's own tokens.
int64_t input_token_bound(const LlmRequest& request) {
  int64_t bytes = static_cast<int64_t>(request.system.size());
  for (const auto& m : request.messages) bytes += static_cast<int64_t>(m.content.size());
  return bytes + 4096;
}

// Everything the endpoint sent, made safe to keep: valid UTF-8 (json::dump throws on anything
// else), without the user's keys (an endpoint that echoes the Authorization header into its
// answer, whole or split), and token counts that cannot push a budget backwards.
void make_attempt_safe(AttemptResult& r, const LlmRequest& request, const Secret& key) {
  r.text = valid_utf8(scrub_registered_secrets(key.scrub(r.text)));
  r.error = valid_utf8(scrub_registered_secrets(key.scrub(r.error)));
  r.finish_reason = clip_utf8(r.finish_reason, 64);
  r.usage = billed_usage(r.usage, answered(r.status), input_token_bound(request),
                         request.max_tokens.value_or(4096));
}

}  // namespace

ProviderClient::ProviderClient(ProviderConfig config, std::unique_ptr<ProviderBackend> backend,
                               Secret key, LlmAccounting* accounting)
    : config_(std::move(config)),
      backend_(std::move(backend)),
      key_(std::move(key)),
      accounting_(accounting),
      concurrency_(config_.max_concurrent),
      pacer_(config_.requests_per_minute),
      backoff_(config_.backoff_initial, config_.backoff_max),
      health_(config_.down_after_failures, config_.down_retry),
      pool_(std::make_unique<WorkerPool>(config_.max_concurrent)) {}

ProviderClient::~ProviderClient() {
  cancel();
  pool_.reset();  // joins; queued requests finish at once as cancelled
}

void ProviderClient::cancel() { cancellation_.cancel(); }

LlmAvailability ProviderClient::availability(const std::string&) const {
  return health_.availability();
}

std::future<LlmResponse> ProviderClient::submit(LlmRequest request) {
  auto promise = std::make_shared<std::promise<LlmResponse>>();
  auto future = promise->get_future();
  pool_->post([this, promise, request = std::move(request)] {
    try {
      promise->set_value(complete(request));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return future;
}

AttemptResult ProviderClient::attempt_once(const LlmRequest& request) {
  AttemptResult r;
  try {
    r = backend_->attempt(request, cancellation_.flag());
  } catch (const std::exception& e) {
    // A bug or a hostile byte that still throws fails this call, not the daemon.
    r = AttemptResult{};
    r.status = LlmStatus::kMalformed;
    r.error = std::string("internal error while calling the endpoint: ") + e.what();
  }
  make_attempt_safe(r, request, key_);
  return r;
}

AttemptResult ProviderClient::run_attempts(const LlmRequest& request, int& attempts,
                                           LlmUsage& usage) {
  for (int attempt = 1;; ++attempt) {
    AttemptResult cancelled;
    cancelled.status = LlmStatus::kCancelled;
    cancelled.error = "the LLM client was shut down";
    if (!cancellation_.sleep_until(pacer_.reserve())) return cancelled;

    attempts = attempt;
    AttemptResult r = attempt_once(request);
    usage.input_tokens += r.usage.input_tokens;
    usage.output_tokens += r.usage.output_tokens;
    if (r.status == LlmStatus::kOk || !llm_status_retryable(r.status) ||
        attempt >= config_.max_attempts) {
      return r;
    }
    // A server that asks for a long pause gets it from the caller (via the endpoint-down
    // state and retry_after), not from a thread sleeping here.
    if (r.retry_after && *r.retry_after > config_.max_retry_wait) {
      r.error += " (the server asks to wait " + std::to_string(seconds(*r.retry_after)) +
                 " s, more than max_retry_wait_s)";
      return r;
    }
    auto wait = backoff_.delay(attempt, r.retry_after);
    spdlog::warn("llm {}/{} {}: attempt {}/{} failed: {}{}{}; retrying in {:.2f} s", config_.name,
                 request.model.value_or(""), request.agent, attempt, config_.max_attempts,
                 llm_status_name(r.status),
                 r.http_status ? " (HTTP " + std::to_string(r.http_status) + ")" : "",
                 r.error.empty() ? "" : ": " + r.error, seconds(wait));
    if (!cancellation_.sleep_until(SteadyClock::now() + wait)) return cancelled;
  }
}

LlmResponse ProviderClient::complete(const LlmRequest& in) {
  auto started_wall = std::chrono::system_clock::now();
  auto started = SteadyClock::now();
  LlmRequest request = in;
  if (!request.max_tokens) request.max_tokens = 4096;

  LlmResponse response;
  response.provider = config_.name;
  response.model = request.model.value_or("");
  LlmAvailability refused;
  if (cancellation_.cancelled()) {
    response.status = LlmStatus::kCancelled;
    response.error = "the LLM client was shut down";
    return response;
  }
  // Refused calls never reach the server, cost nothing, and are not recorded.
  if (!health_.admit(refused)) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(refused.retry_at -
                                                                      SteadyClock::now());
    response.status = LlmStatus::kUnavailable;
    response.retry_after = std::max(wait, std::chrono::milliseconds(0));
    response.error = "endpoint '" + config_.name + "' is down (" + refused.reason +
                     "); next try in " + std::to_string(seconds(*response.retry_after)) + " s";
    return response;
  }

  AttemptResult last;
  LlmUsage usage;
  if (ConcurrencySlot slot(concurrency_, cancellation_); slot.held()) {
    last = run_attempts(request, response.attempts, usage);
  } else {
    last.status = LlmStatus::kCancelled;
    last.error = "the LLM client was shut down";
  }
  health_.finished(last.status, last.error, last.retry_after);

  response.status = last.status;
  response.text = std::move(last.text);
  response.error = std::move(last.error);
  response.finish_reason = std::move(last.finish_reason);
  response.http_status = last.http_status;
  response.retry_after = last.retry_after;
  response.usage = usage;
  response.cost_usd = accounting_ ? accounting_->cost(response.model, usage) : 0.0;
  response.latency =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started);

  if (response.ok()) {
    spdlog::debug("llm {}/{} {}: ok in {:.1f} s, {} attempt(s), {}+{} tokens", config_.name,
                  response.model, request.agent, seconds(response.latency), response.attempts,
                  usage.input_tokens, usage.output_tokens);
  } else if (response.status != LlmStatus::kCancelled) {
    spdlog::warn("llm {}/{} {}: failed after {} attempt(s): {}", config_.name, response.model,
                 request.agent, response.attempts, response.describe());
  }
  if (accounting_) {
    LlmCallRecord record;
    record.started = started_wall;
    record.agent = request.agent;
    record.provider = config_.name;
    record.model = response.model;
    record.label = request.label;
    record.status = response.status;
    record.http_status = response.http_status;
    record.attempts = response.attempts;
    record.input_tokens = usage.input_tokens;
    record.output_tokens = usage.output_tokens;
    record.cost_usd = response.cost_usd;
    record.latency = response.latency;
    record.error = response.error;
    accounting_->record(record);
  }
  return response;
}

}  // namespace kopt
