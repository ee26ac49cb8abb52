// The "llm" section: providers, agents, prices.
#include <algorithm>

#include "common/enum_names.h"
#include "common/strings.h"
#include "config/config_sections.h"

namespace kopt {

using nlohmann::json;
using Bound = ObjectReader::Bound;

namespace {

constexpr EnumNames<ProviderType, 3> kProviderTypes = {{"openai", "anthropic", "command"}};
static_assert(names_each_enumerator(kProviderTypes, ProviderType::kCommand));

// Keys that only make sense for one type are read only for that type, so that (for example)
// "command" on an openai provider is reported as an unknown key.
ProviderConfig read_provider(JsonReader& reader, const std::string& name, const json& node) {
  ObjectReader r(reader, &node, "$.llm.providers." + name);
  ProviderConfig p;
  p.name = name;
  std::string type;
  r.choice("type", type, enum_names(kProviderTypes), /*required=*/true);
  // choice() accepted only the table's names (or reported the type): openai stands in after an
  // error, so that reading goes on and every mistake is reported at once.
  p.type = enum_from_name(kProviderTypes, type).value_or(ProviderType::kOpenAi);

  if (p.type == ProviderType::kCommand) {
    r.string_list("command", p.command, /*required=*/true);
    if (node.contains("command") && node["command"].is_array() && p.command.empty())
      reader.error(r.path_of("command"), "needs at least the program to run");
    std::string output = "text";
    r.choice("output", output, {"text", "json"});
    p.command_output_json = output == "json";
  } else {
    p.base_url = p.type == ProviderType::kAnthropic ? "https://api.anthropic.com"
                                                    : "https://api.openai.com/v1";
    r.string("base_url", p.base_url);
    if (!starts_with(p.base_url, "http://") && !starts_with(p.base_url, "https://"))
      reader.error(r.path_of("base_url"), "must start with http:// or https://");
    while (!p.base_url.empty() && p.base_url.back() == '/') p.base_url.pop_back();
    if (p.type == ProviderType::kOpenAi) {
      r.choice("max_tokens_field", p.max_tokens_field, {"max_tokens", "max_completion_tokens"});
    } else {
      r.string("anthropic_version", p.anthropic_version);
    }
    r.seconds("connect_timeout_s", p.connect_timeout);
  }
  r.string("api_key_env", p.api_key_env);
  r.seconds("timeout_s", p.timeout);
  r.integer("max_concurrent", p.max_concurrent, Bound::kPositive);
  r.number("requests_per_minute", p.requests_per_minute, Bound::kNonNegative);
  r.integer("max_attempts", p.max_attempts, Bound::kPositive);
  r.seconds("backoff_initial_s", p.backoff_initial);
  r.seconds("backoff_max_s", p.backoff_max);
  r.seconds("max_retry_wait_s", p.max_retry_wait);
  r.integer("down_after_failures", p.down_after_failures, Bound::kPositive);
  r.seconds("down_retry_s", p.down_retry);
  r.finish();
  if (p.timeout.count() == 0) reader.error(r.path_of("timeout_s"), "must be positive");
  return p;
}

AgentConfig read_agent(JsonReader& reader, const std::string& role, const json& node,
                       const std::map<std::string, ProviderConfig>& providers) {
  ObjectReader r(reader, &node, "$.llm.agents." + role);
  AgentConfig a;
  a.role = role;
  r.string("provider", a.provider, /*required=*/true);
  auto provider = providers.find(a.provider);
  bool is_command = provider != providers.end() && provider->second.type == ProviderType::kCommand;
  // A command provider may not care about the model name; HTTP APIs always need one.
  r.string("model", a.model, /*required=*/!is_command);
  r.number("temperature", a.temperature, Bound::kNonNegative);
  if (a.temperature && *a.temperature > 2.0) reader.error(r.path_of("temperature"), "must be <= 2");
  r.integer("max_tokens", a.max_tokens, Bound::kPositive);
  r.integer("max_tokens_ceiling", a.max_tokens_ceiling, Bound::kPositive);
  if (a.max_tokens_ceiling && *a.max_tokens_ceiling < a.max_tokens) {
    reader.error(r.path_of("max_tokens_ceiling"),
                 "must be at least max_tokens (" + std::to_string(a.max_tokens) + ")");
  }
  r.integer("context_tokens", a.context_tokens, Bound::kPositive);
  if (a.context_tokens && *a.context_tokens <= a.max_tokens) {
    reader.error(r.path_of("context_tokens"), "must be more than max_tokens (" +
                                                  std::to_string(a.max_tokens) +
                                                  "): the prompt needs room too");
  }
  r.number("max_temperature", a.max_temperature, Bound::kNonNegative);
  if (a.max_temperature && *a.max_temperature > 2.0) {
    reader.error(r.path_of("max_temperature"), "must be <= 2");
  } else if (a.max_temperature && a.temperature && *a.max_temperature < *a.temperature) {
    reader.error(r.path_of("max_temperature"), "must be at least temperature");
  }
  r.finish();
  if (!a.provider.empty() && provider == providers.end() && !providers.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, _] : providers) names.push_back(name);
    reader.error(r.path_of("provider"), "no provider named '" + a.provider +
                                            "' in $.llm.providers" +
                                            did_you_mean(a.provider, names));
  }
  return a;
}

ModelPrice read_price(JsonReader& reader, const std::string& model, const json& node) {
  ObjectReader r(reader, &node, "$.llm.prices." + model);
  ModelPrice price;
  r.require("input_per_mtok");
  r.require("output_per_mtok");
  r.number("input_per_mtok", price.input_per_mtok, Bound::kNonNegative);
  r.number("output_per_mtok", price.output_per_mtok, Bound::kNonNegative);
  r.finish();
  return price;
}

// Calls `read` for each member of the object at `section.key`, which must be an object whose
// members are objects.
template <typename Fn>
void for_each_entry(ObjectReader& section, const std::string& key, bool required, Fn read) {
  const json* entries = section.object(key, required);
  if (!entries) return;
  for (const auto& [name, value] : entries->items()) {
    if (!value.is_object()) {
      section.reader().error(section.path_of(key) + "." + name,
                             "expected an object, found " + json_type_name(value.type()));
      continue;
    }
    read(name, value);
  }
}

}  // namespace

const std::vector<std::string>& agent_roles() {
  static const std::vector<std::string> roles = {"planner", "coder", "summarizer"};
  return roles;
}

LlmConfig read_llm_section(JsonReader& reader, const json& section) {
  ObjectReader r(reader, &section, "$.llm");
  LlmConfig llm;
  for_each_entry(r, "providers", true, [&](const std::string& name, const json& node) {
    llm.providers[name] = read_provider(reader, name, node);
  });
  if (section.contains("providers") && section["providers"].is_object() && llm.providers.empty())
    reader.error("$.llm.providers", "needs at least one provider");

  for_each_entry(r, "agents", true, [&](const std::string& role, const json& node) {
    if (std::find(agent_roles().begin(), agent_roles().end(), role) == agent_roles().end()) {
      reader.error("$.llm.agents." + role, "unknown agent, expected one of " +
                                               join(agent_roles(), ", ") +
                                               did_you_mean(role, agent_roles()));
      return;
    }
    llm.agents[role] = read_agent(reader, role, node, llm.providers);
  });
  if (section.contains("agents") && section["agents"].is_object()) {
    for (const auto& role : agent_roles()) {
      if (!section["agents"].contains(role))
        reader.error("$.llm.agents." + role, "required field is missing");
    }
  }

  for_each_entry(r, "prices", false, [&](const std::string& model, const json& node) {
    llm.prices[model] = read_price(reader, model, node);
  });
  int64_t max_response_bytes = static_cast<int64_t>(llm.max_response_bytes);
  r.integer("max_response_bytes", max_response_bytes, Bound::kPositive);
  llm.max_response_bytes = static_cast<size_t>(max_response_bytes);
  r.finish();
  return llm;
}

int AgentConfig::effective_max_tokens_ceiling() const {
  return max_tokens_ceiling ? static_cast<int>(*max_tokens_ceiling) : 2 * max_tokens;
}

std::optional<double> AgentConfig::effective_max_temperature() const {
  if (max_temperature) return max_temperature;
  if (!temperature) return std::nullopt;
  return std::max(*temperature, std::min(1.0, *temperature + 0.4));
}

const AgentConfig* LlmConfig::agent(const std::string& role) const {
  auto it = agents.find(role);
  return it == agents.end() ? nullptr : &it->second;
}

const ProviderConfig* LlmConfig::provider_for(const std::string& role) const {
  const AgentConfig* a = agent(role);
  if (!a) return nullptr;
  auto it = providers.find(a->provider);
  return it == providers.end() ? nullptr : &it->second;
}

const char* provider_type_name(ProviderType type) { return enum_name(kProviderTypes, type, "?"); }

}  // namespace kopt
