// The effective configuration as log lines. Nothing secret may appear here: keys are named by
// their environment variable only, URLs are stripped of credentials and queries, and a command
// provider shows its program, not its arguments.
#include <fmt/format.h>

#include <cstdlib>

#include "common/strings.h"
#include "config/config.h"

namespace kopt {

namespace {

std::string seconds_text(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

std::string key_text(const std::string& env) {
  if (env.empty()) return "no key";
  const char* value = std::getenv(env.c_str());
  return "key from $" + env + (value && *value ? " (set)" : " (NOT SET)");
}

std::string describe_provider(const ProviderConfig& p) {
  std::string endpoint =
      p.type == ProviderType::kCommand
          ? "program '" + (p.command.empty() ? std::string() : p.command[0]) + "'" +
                (p.command.size() > 1 ? fmt::format(" (+{} args)", p.command.size() - 1) : "")
          : redact_url(p.base_url);
  std::string limits = fmt::format(
      "timeout {}, {} concurrent, {}, {} attempts, backoff {}..{}", seconds_text(p.timeout),
      p.max_concurrent,
      p.requests_per_minute > 0 ? fmt::format("{:g} requests/min", p.requests_per_minute)
                                : std::string("no rate limit"),
      p.max_attempts, seconds_text(p.backoff_initial), seconds_text(p.backoff_max));
  return fmt::format("llm provider '{}': {} {}, {}; {}", p.name, provider_type_name(p.type),
                     endpoint, key_text(p.api_key_env), limits);
}

std::string describe_agent(const LlmConfig& llm, const AgentConfig& a) {
  std::string price = "no price (cost counted as 0)";
  if (auto it = llm.prices.find(a.model); it != llm.prices.end()) {
    price = fmt::format("${:g} in / ${:g} out per Mtok", it->second.input_per_mtok,
                        it->second.output_per_mtok);
  }
  return fmt::format(
      "llm agent {}: provider '{}', model '{}', {}, max {} tokens (up to {} "
      "after a cut-off answer), {}",
      a.role, a.provider, a.model,
      a.temperature ? fmt::format("temperature {:g}", *a.temperature)
                    : std::string("default temperature"),
      a.max_tokens, a.effective_max_tokens_ceiling(), price);
}

template <typename T>
std::string optional_text(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string("none");
}

std::string describe_daemon(const DaemonConfig& d) {
  std::vector<std::string> gpus;
  for (int g : d.gpus) gpus.push_back(std::to_string(g));
  return fmt::format(
      "daemon: budgets hours={}, max_usd={}, candidates_per_task={}, max_usd_per_task={}, "
      "max_usd_per_hour={}; gpus {}; worker {}",
      optional_text(d.budgets.hours), optional_text(d.budgets.max_usd),
      optional_text(d.budgets.candidates_per_task), optional_text(d.budgets.max_usd_per_task),
      optional_text(d.budgets.max_usd_per_hour), gpus.empty() ? "all" : join(gpus, ","),
      d.worker_command.empty() ? std::string("local") : "'" + join(d.worker_command, " ") + "'");
}

}  // namespace

std::string redact_url(const std::string& url) {
  std::string out = url;
  if (size_t q = out.find_first_of("?#"); q != std::string::npos) out.erase(q);
  size_t scheme = out.find("://");
  size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  size_t host_end = out.find('/', host_start);
  size_t at = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
  if (at != std::string::npos && at >= host_start) out.erase(host_start, at + 1 - host_start);
  return out;
}

std::string describe(const Config& config) {
  std::vector<std::string> lines;
  lines.push_back(config.source.empty() ? "config: built-in defaults (no config file)"
                                        : "config: " + config.source.string());
  lines.push_back("database: " + config.database_path.string());
  if (!config.llm) {
    lines.push_back("llm: none configured (the daemon uses its built-in tuner)");
  } else {
    for (const auto& [_, p] : config.llm->providers) lines.push_back(describe_provider(p));
    for (const auto& role : agent_roles()) {
      if (const AgentConfig* a = config.llm->agent(role)) {
        lines.push_back(describe_agent(*config.llm, *a));
      }
    }
    lines.push_back(
        fmt::format("llm responses over {} bytes are rejected", config.llm->max_response_bytes));
  }
  lines.push_back(describe_daemon(config.daemon));
  return join(lines, "\n");
}

}  // namespace kopt
