#include "llm/preflight.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>

#include "common/enum_names.h"
#include "common/json_limits.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "llm/http_transport.h"
#include "llm/provider_backend.h"
#include "llm/wire_format.h"

namespace kopt {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// A probe must be cheap: a few tokens, and no waiting for a whole generation's timeout.
constexpr int kProbeMaxTokens = 16;
constexpr std::chrono::milliseconds kProbeTimeout{60'000};

std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

ProviderConfig probe_config(const ProviderConfig& provider) {
  ProviderConfig p = provider;
  p.timeout = std::min(p.timeout, kProbeTimeout);
  return p;
}

ProbeOutcome outcome_of(LlmStatus status) {
  switch (status) {
    case LlmStatus::kOk:
    case LlmStatus::kTruncated:  // a few tokens of budget: cut off is an answer
    case LlmStatus::kEmpty:      // reasoning models spend a tiny budget on thinking
      return ProbeOutcome::kOk;
    case LlmStatus::kRefused:
      return ProbeOutcome::kRefused;
    case LlmStatus::kAuth:
      return ProbeOutcome::kAuth;
    case LlmStatus::kNotFound:
      return ProbeOutcome::kUnknownModel;
    case LlmStatus::kConnection:
    case LlmStatus::kTimeout:
      return ProbeOutcome::kUnreachable;
    case LlmStatus::kRateLimited:
    case LlmStatus::kServerError:
      return ProbeOutcome::kBusy;
    default:
      return ProbeOutcome::kFailed;
  }
}

// A completion of a few tokens through the provider's own backend, as the daemon would send it.
void probe_completion(const ProviderConfig& provider, const Secret& key, size_t max_bytes,
                      ProbeResult& result) {
  ProviderConfig config = probe_config(provider);
  std::unique_ptr<ProviderBackend> backend = config.type == ProviderType::kCommand
                                                 ? make_command_backend(config, max_bytes)
                                                 : make_http_backend(config, max_bytes, key);
  LlmRequest request =
      LlmRequest::user(result.target.roles.empty() ? "preflight" : result.target.roles.front(), "",
                       "This is a connectivity check. Reply with the single word: ok");
  request.model = result.target.model;
  request.max_tokens = kProbeMaxTokens;
  request.label = "preflight";
  std::atomic<bool> never_cancelled{false};
  AttemptResult answer = backend->attempt(request, never_cancelled);
  result.http_status = answer.http_status;
  result.outcome = outcome_of(answer.status);
  std::string error = valid_utf8(key.scrub(answer.error));
  std::string http = answer.http_status ? "HTTP " + std::to_string(answer.http_status) + ": " : "";
  switch (result.outcome) {
    case ProbeOutcome::kOk:
      result.detail +=
          "answered a completion (" + std::string(llm_status_name(answer.status)) + ", " +
          (answer.usage.output_tokens < 0 ? std::string("unreported")
                                          : std::to_string(answer.usage.output_tokens)) +
          " tokens)";
      break;
    case ProbeOutcome::kRefused:
      result.detail += error;  // "the model refused: <its text>"
      break;
    case ProbeOutcome::kAuth:
      result.detail += "the key was refused: " + http + error;
      break;
    case ProbeOutcome::kUnknownModel:
      result.detail +=
          "the server does not know model '" + result.target.model + "': " + http + error;
      break;
    default:
      result.detail += std::string(llm_status_name(answer.status)) + ": " + http + error;
  }
}

struct ModelsList {
  bool listed = false;  // the server has a models list and answered with it
  std::vector<std::string> ids;
};

// GET the models list. Returns false when the probe is decided by it (auth, unreachable).
bool probe_models_list(const ProviderConfig& provider, const Secret& key, size_t max_bytes,
                       ProbeResult& result, ModelsList& list) {
  std::unique_ptr<WireFormat> format = make_wire_format(provider);
  HttpPost get;
  get.get = true;
  get.url = provider.base_url +
            (provider.type == ProviderType::kAnthropic ? "/v1/models?limit=1000" : "/models");
  get.headers = format->headers(key);
  get.connect_timeout = provider.connect_timeout;
  get.timeout = std::min(provider.timeout, kProbeTimeout);
  get.max_response_bytes = max_bytes;
  HttpReply reply = http_post(get);
  result.http_status = static_cast<int>(reply.status);
  if (reply.outcome == HttpReply::Outcome::kTimeout ||
      reply.outcome == HttpReply::Outcome::kConnection) {
    result.outcome = ProbeOutcome::kUnreachable;
    result.detail = redact_url(provider.base_url) + ": " + key.scrub(reply.error);
    return false;
  }
  if (reply.outcome == HttpReply::Outcome::kInvalid) {
    result.outcome = ProbeOutcome::kFailed;
    result.detail = "base_url '" + redact_url(provider.base_url) + "': " + reply.error;
    return false;
  }
  if (reply.outcome == HttpReply::Outcome::kResponse &&
      (reply.status == 401 || reply.status == 403)) {
    result.outcome = ProbeOutcome::kAuth;
    result.detail = "the key was refused: HTTP " + std::to_string(reply.status) + ": " +
                    key.scrub(server_error_message(reply.body));
    return false;
  }
  if (reply.outcome != HttpReply::Outcome::kResponse || reply.status < 200 || reply.status >= 300) {
    return true;  // no usable list (404 on servers without one): a completion decides
  }
  json body = parse_json_bounded(reply.body);
  if (!body.is_object() || !body.contains("data") || !body["data"].is_array()) return true;
  list.listed = true;
  for (const json& m : body["data"]) {
    if (m.is_object() && m.contains("id") && m["id"].is_string())
      list.ids.push_back(m["id"].get<std::string>());
  }
  return true;
}

}  // namespace

constexpr EnumNames<ProbeOutcome, 8> kOutcomeNames = {
    {"ok", "busy", "no key", "auth", "unknown model", "unreachable", "refused", "failed"}};
static_assert(names_each_enumerator(kOutcomeNames, ProbeOutcome::kFailed));

const char* probe_outcome_name(ProbeOutcome outcome) {
  return enum_name(kOutcomeNames, outcome, "failed");
}

std::string ProbeResult::line() const {
  std::string out = target.provider + "/" + target.model + " (" + join(target.roles, ", ") +
                    "): " + probe_outcome_name(outcome) + ": " + detail;
  if (!method.empty()) {
    out += "; " + std::to_string(round_trip.count()) + " ms (" + method + ")";
  }
  return out;
}

std::vector<ProbeTarget> probe_targets(const LlmConfig& config) {
  std::map<std::pair<std::string, std::string>, ProbeTarget> by_pair;
  for (const auto& [role, agent] : config.agents) {
    ProbeTarget& t = by_pair[{agent.provider, agent.model}];
    t.provider = agent.provider;
    t.model = agent.model;
    t.roles.push_back(role);
  }
  std::vector<ProbeTarget> targets;
  for (auto& [_, t] : by_pair) targets.push_back(std::move(t));
  return targets;
}

ProbeResult probe_model(const ProviderConfig& provider, const Secret& key,
                        const ProbeTarget& target, size_t max_response_bytes) {
  ProbeResult result;
  result.target = target;
  auto start = Clock::now();
  if (provider.type == ProviderType::kCommand) {
    result.method = "completion";
    probe_completion(provider, key, max_response_bytes, result);
    result.round_trip = since(start);
    return result;
  }
  ModelsList list;
  result.method = "models list";
  if (!probe_models_list(provider, key, max_response_bytes, result, list)) {
    result.round_trip = since(start);
    return result;
  }
  if (list.listed && std::find(list.ids.begin(), list.ids.end(), target.model) != list.ids.end()) {
    result.outcome = ProbeOutcome::kOk;
    result.detail = "reachable, key accepted, model listed by the server";
    result.http_status = 200;
    result.round_trip = since(start);
    return result;
  }
  // Not listed under this name (or no list): the model may still be an alias the API accepts.
  result.method = list.listed ? "models list + completion" : "completion";
  probe_completion(provider, key, max_response_bytes, result);
  if (result.outcome == ProbeOutcome::kUnknownModel && list.listed) {
    result.detail += "; the server lists " + std::to_string(list.ids.size()) + " model" +
                     (list.ids.size() == 1 ? "" : "s") + did_you_mean(target.model, list.ids);
  }
  result.round_trip = since(start);
  return result;
}

std::vector<ProbeResult> preflight_llm(const LlmConfig& config) {
  std::vector<ProbeResult> results;
  for (const ProbeTarget& target : probe_targets(config)) {
    auto provider = config.providers.find(target.provider);
    if (provider == config.providers.end()) {
      ProbeResult r;
      r.target = target;
      r.outcome = ProbeOutcome::kFailed;
      r.detail = "no provider '" + target.provider + "' in llm.providers";
      results.push_back(std::move(r));
      continue;
    }
    Secret key;
    if (!provider->second.api_key_env.empty()) {
      auto from_env = Secret::from_env(provider->second.api_key_env);
      if (!from_env) {
        ProbeResult r;
        r.target = target;
        r.outcome = ProbeOutcome::kNoKey;
        r.detail = from_env.error() + " (llm.providers." + target.provider + ".api_key_env)";
        results.push_back(std::move(r));
        continue;
      }
      key = std::move(*from_env);
    }
    results.push_back(probe_model(provider->second, key, target, config.max_response_bytes));
  }
  return results;
}

}  // namespace kopt
