#include "llm/llm_service.h"

#include "common/strings.h"

namespace kopt {

LlmService::LlmService(LlmConfig config, std::unique_ptr<LlmAccounting> accounting)
    : config_(std::move(config)), accounting_(std::move(accounting)) {}

LlmService::~LlmService() {
  shutdown();
  providers_.clear();  // joins their threads before the accounting goes
}

Result<std::unique_ptr<LlmService>> LlmService::create(const LlmConfig& config, LlmCallSink* sink) {
  std::unique_ptr<LlmService> service(
      new LlmService(config, std::make_unique<LlmAccounting>(config.prices, sink)));
  std::vector<std::string> errors;
  for (const auto& [name, provider] : config.providers) {
    Secret key;
    if (!provider.api_key_env.empty()) {
      auto from_env = Secret::from_env(provider.api_key_env);
      if (!from_env) {
        errors.push_back("llm provider '" + name + "': " + from_env.error() +
                         " (named by llm.providers." + name + ".api_key_env)");
        continue;
      }
      key = std::move(*from_env);
    }
    std::unique_ptr<ProviderBackend> backend =
        provider.type == ProviderType::kCommand
            ? make_command_backend(provider, config.max_response_bytes)
            : make_http_backend(provider, config.max_response_bytes, key);
    service->providers_[name] = std::make_unique<ProviderClient>(
        provider, std::move(backend), std::move(key), service->accounting_.get());
  }
  if (!errors.empty()) return make_error(join(errors, "\n"));
  return service;
}

void LlmService::shutdown() {
  for (auto& [_, p] : providers_) p->cancel();
}

ProviderClient* LlmService::provider(const std::string& name) const {
  auto it = providers_.find(name);
  return it == providers_.end() ? nullptr : it->second.get();
}

ProviderClient* LlmService::route(LlmRequest& request, std::string& error) const {
  const AgentConfig* agent = config_.agent(request.agent);
  if (!agent) {
    std::vector<std::string> roles;
    for (const auto& [role, _] : config_.agents) roles.push_back(role);
    error = "no agent '" + request.agent + "' in llm.agents" + did_you_mean(request.agent, roles);
    return nullptr;
  }
  if (!request.model) request.model = agent->model;
  if (!request.temperature) request.temperature = agent->temperature;
  if (!request.max_tokens) request.max_tokens = agent->max_tokens;
  ProviderClient* p = provider(agent->provider);
  if (!p) error = "agent '" + request.agent + "' names no configured provider";
  return p;
}

LlmResponse LlmService::complete(const LlmRequest& request) {
  LlmRequest routed = request;
  std::string error;
  ProviderClient* p = route(routed, error);
  if (!p) {
    LlmResponse response;
    response.status = LlmStatus::kBadRequest;
    response.error = error;
    return response;
  }
  return p->complete(routed);
}

std::future<LlmResponse> LlmService::submit(LlmRequest request) {
  std::string error;
  ProviderClient* p = route(request, error);
  if (!p) {
    std::promise<LlmResponse> failed;
    LlmResponse response;
    response.status = LlmStatus::kBadRequest;
    response.error = error;
    failed.set_value(std::move(response));
    return failed.get_future();
  }
  return p->submit(std::move(request));
}

std::optional<AgentLimits> LlmService::agent_limits(const std::string& agent) const {
  const AgentConfig* a = config_.agent(agent);
  if (!a) return std::nullopt;
  AgentLimits limits;
  limits.max_tokens = a->max_tokens;
  limits.max_tokens_ceiling = a->effective_max_tokens_ceiling();
  limits.temperature = a->temperature;
  limits.max_temperature = a->effective_max_temperature();
  if (a->context_tokens) limits.context_tokens = static_cast<int>(*a->context_tokens);
  return limits;
}

LlmAvailability LlmService::availability(const std::string& agent) const {
  const AgentConfig* a = config_.agent(agent);
  ProviderClient* p = a ? provider(a->provider) : nullptr;
  if (!p) {
    LlmAvailability none;
    none.available = false;
    none.retry_at = std::chrono::steady_clock::time_point::max();
    none.reason = "no agent '" + agent + "' in llm.agents";
    return none;
  }
  return p->availability(agent);
}

}  // namespace kopt
