// The one interface the agents talk to. The real one (LlmService) routes each agent to its
// configured provider; tests of the agents and the daemon replace it with a fake.
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "llm/llm_types.h"

namespace kopt {

// Whether an endpoint is worth calling now. When it is down, callers keep other work going
// (GPU evaluations) and come back at retry_at.
struct LlmAvailability {
  bool available = true;
  std::chrono::steady_clock::time_point retry_at{};  // meaningful when !available
  std::string reason;                                // the last failure, key-free
};

// What an agent is configured with, for callers that adapt a request: a larger max_tokens after
// a cut-off answer (up to the ceiling), a hotter temperature when the model repeats itself.
struct AgentLimits {
  int max_tokens = 4096;
  int max_tokens_ceiling = 8192;
  std::optional<double> temperature;      // unset: the server's default
  std::optional<double> max_temperature;  // how far a stall may raise it; unset: not at all
  std::optional<int> context_tokens;      // prompt + answer; unset: unknown
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;

  // Sends one request and waits for its completion or a classified failure, retries included.
  // Never throws for anything a server or the network can do; safe to call from many threads.
  virtual LlmResponse complete(const LlmRequest& request) = 0;

  // Starts complete() on the client's own threads so that several requests are in flight while
  // the caller does other work. The default runs each request on a thread of its own.
  virtual std::future<LlmResponse> submit(LlmRequest request);

  // Whether the endpoint serving `agent` is up. The default says it always is.
  virtual LlmAvailability availability(const std::string& agent) const;

  // The agent's configured limits; nullopt when the client does not know them.
  virtual std::optional<AgentLimits> agent_limits(const std::string& agent) const;
};

}  // namespace kopt
