// One attempt at one provider: an HTTP API or a local command. Retries, limits, health and
// accounting live in ProviderClient, above this.
#pragma once

#include <atomic>
#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "llm/secret.h"
#include "llm/wire_format.h"

namespace kopt {

class ProviderBackend {
 public:
  virtual ~ProviderBackend() = default;
  // `request` has model and max_tokens resolved. Must return within the provider's timeout
  // (or soon after `cancel` turns true). Thread-safe.
  virtual AttemptResult attempt(const LlmRequest& request, const std::atomic<bool>& cancel) = 0;
};

// The backend for `provider.type`. `key` may be empty (local servers take none).
std::unique_ptr<ProviderBackend> make_http_backend(const ProviderConfig& provider,
                                                   size_t max_response_bytes, Secret key);
// The process must ignore SIGPIPE (kopt's main does), or a program that exits without reading
// its stdin kills the daemon.
std::unique_ptr<ProviderBackend> make_command_backend(const ProviderConfig& provider,
                                                      size_t max_response_bytes);

}  // namespace kopt
