// One configured provider behind the LlmClient interface: the retry loop (backoff with jitter,
// Retry-After, bounded attempts), the limits on requests in flight and per minute, the
// endpoint-down state, key scrubbing and accounting. The backend makes single attempts.
#pragma once

#include <memory>

#include "config/config.h"
#include "llm/accounting.h"
#include "llm/endpoint_health.h"
#include "llm/llm_client.h"
#include "llm/provider_backend.h"
#include "llm/request_limits.h"
#include "llm/worker_pool.h"

namespace kopt {

class ProviderClient : public LlmClient {
 public:
  // `key` is used only to scrub error text (the backend holds its own copy for headers).
  // `accounting` may be null and must outlive this client.
  ProviderClient(ProviderConfig config, std::unique_ptr<ProviderBackend> backend, Secret key,
                 LlmAccounting* accounting);
  // Cancels what is in flight and waits for it.
  ~ProviderClient() override;

  // `request.model` must be set; max_tokens defaults to 4096.
  LlmResponse complete(const LlmRequest& request) override;
  // Queued on this provider's max_concurrent threads.
  std::future<LlmResponse> submit(LlmRequest request) override;
  LlmAvailability availability(const std::string& agent) const override;

  // Ends every wait and transfer; calls under way and later ones return kCancelled.
  void cancel();

  const ProviderConfig& config() const { return config_; }
  // The most requests that were in flight at once (for tests and the status display).
  int in_flight_peak() const { return concurrency_.in_flight_peak(); }

 private:
  // One attempt, its result made safe (make_attempt_safe); an exception becomes a failed attempt.
  AttemptResult attempt_once(const LlmRequest& request);
  // The attempts of one admitted call.
  AttemptResult run_attempts(const LlmRequest& request, int& attempts, LlmUsage& usage);

  ProviderConfig config_;
  std::unique_ptr<ProviderBackend> backend_;
  Secret key_;
  LlmAccounting* accounting_;
  Cancellation cancellation_;
  ConcurrencyLimit concurrency_;
  RequestPacer pacer_;
  Backoff backoff_;
  EndpointHealth health_;
  std::unique_ptr<WorkerPool> pool_;  // last: its threads use everything above
};

}  // namespace kopt
