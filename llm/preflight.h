// The pre-flight check of the configured models: one cheap request per (provider, model) that
// the agents use, before a night starts. A wrong key, a misspelled model or a server that is not
// up shows here, in one line each, instead of at the daemon's first call.
//
// HTTP providers are asked for their models list (GET {base_url}/models, Anthropic:
// GET {base_url}/v1/models); where there is none, or where the model is not listed under that
// name (aliases, "llama3" for "llama3:latest"), a completion of a few tokens decides. Command
// providers get that completion directly.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.h"
#include "llm/secret.h"

namespace kopt {

// One (provider, model) pair and the agents that use it.
struct ProbeTarget {
  std::string provider;
  std::string model;
  std::vector<std::string> roles;  // "planner", "coder", ...
};

enum class ProbeOutcome {
  kOk,            // reachable, the key accepted, the model exists
  kBusy,          // reachable but rate limited or overloaded: the daemon's retries handle it
  kNoKey,         // the key variable is not set
  kAuth,          // the key was refused (401, 403)
  kUnknownModel,  // the server does not know the model (404, or not listed and 404 on use)
  kUnreachable,   // refused connection, no such host, timeout
  kRefused,       // the model declined the probe (its text is in `detail`)
  kFailed,        // any other answer (400, a body that is not the API's)
};

// "ok", "busy", "no key", "auth", "unknown model", "unreachable", "refused", "failed".
const char* probe_outcome_name(ProbeOutcome outcome);

struct ProbeResult {
  ProbeTarget target;
  ProbeOutcome outcome = ProbeOutcome::kOk;
  std::string method;  // "models list", "models list + completion", "completion"
  std::string detail;  // what was found or what went wrong; never contains the key
  int http_status = 0;
  std::chrono::milliseconds round_trip{0};  // all requests of the probe together

  // Whether a night can start with this model (ok or busy).
  bool usable() const { return outcome == ProbeOutcome::kOk || outcome == ProbeOutcome::kBusy; }
  // "openai/gpt-4o (planner, coder): ok, listed by the server; 212 ms (models list)".
  std::string line() const;
};

// The distinct (provider, model) pairs of the agents, in provider then model order.
std::vector<ProbeTarget> probe_targets(const LlmConfig& config);

// Probes one target on `provider` with `key` (empty for servers that take none).
ProbeResult probe_model(const ProviderConfig& provider, const Secret& key,
                        const ProbeTarget& target, size_t max_response_bytes);

// Probes every target of `config`, reading keys from their environment variables.
std::vector<ProbeResult> preflight_llm(const LlmConfig& config);

}  // namespace kopt
