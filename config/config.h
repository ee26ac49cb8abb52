// kopt's configuration file (JSON): the database, the LLM providers and agents, and the daemon's
// settings, loaded into typed structs and validated in one pass. The format is shown by the
// examples in configs/; every key is optional unless noted.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

inline constexpr int kConfigFormatVersion = 1;

enum class ProviderType { kOpenAi, kAnthropic, kCommand };

// "openai", "anthropic", "command".
const char* provider_type_name(ProviderType type);

// One endpoint kopt can send completions to, with its limits and retry policy.
struct ProviderConfig {
  std::string name;  // the key under llm.providers
  ProviderType type = ProviderType::kOpenAi;

  // openai / anthropic.
  std::string base_url;  // defaulted per type: https://api.openai.com/v1, https://api.anthropic.com
  std::string api_key_env;  // environment variable holding the key; "" = no key (local servers)
  std::string max_tokens_field =
      "max_tokens";  // openai: newer hosted models want max_completion_tokens
  std::string anthropic_version = "2023-06-01";

  // command: argv of a program that reads the request JSON on stdin and writes the completion.
  std::vector<std::string> command;
  bool command_output_json = false;  // stdout is {"text", "finish_reason", "usage"} instead of text

  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds timeout{300'000};  // one attempt, start to end
  int max_concurrent = 4;
  double requests_per_minute = 0;  // 0: no limit
  int max_attempts = 5;
  std::chrono::milliseconds backoff_initial{1'000};
  std::chrono::milliseconds backoff_max{60'000};
  std::chrono::milliseconds max_retry_wait{300'000};  // a longer Retry-After ends the call at once
  int down_after_failures = 3;  // consecutive failed calls before the endpoint counts as down
  std::chrono::milliseconds down_retry{60'000};  // how long a down endpoint is left alone
};

// Which provider and model an agent (planner, coder, summarizer) uses.
struct AgentConfig {
  std::string role;
  std::string provider;
  std::string model;
  std::optional<double> temperature;  // unset: the server's default (some models accept no other)
  int max_tokens = 4096;
  // An answer cut at max_tokens is asked for again with twice the limit, up to this ceiling.
  std::optional<int64_t> max_tokens_ceiling;  // unset: 2 x max_tokens
  // How far a stalling search may raise the temperature. Unset: 0.4 above `temperature`, at
  // most 1.0 (and never when no temperature is configured).
  std::optional<double> max_temperature;
  // The model's context window in tokens, prompt and answer together. Unset: unknown, nothing
  // clamped. Set, each ask's max_tokens is clamped to what its prompt leaves of it, so that a
  // long prompt does not make a 32k-context server answer 400 (which is not retried).
  std::optional<int64_t> context_tokens;

  int effective_max_tokens_ceiling() const;
  std::optional<double> effective_max_temperature() const;
};

struct ModelPrice {
  double input_per_mtok = 0;   // USD per million prompt tokens
  double output_per_mtok = 0;  // USD per million completion tokens
};

// The agent roles the daemon drives; each needs an entry under llm.agents.
const std::vector<std::string>& agent_roles();

struct LlmConfig {
  std::map<std::string, ProviderConfig> providers;
  std::map<std::string, AgentConfig> agents;  // by role
  std::map<std::string, ModelPrice> prices;   // by model; a model without a price costs 0
  size_t max_response_bytes = 512u << 10;     // larger responses are rejected (too_large)

  // The agent's config and its provider's, or nullptr for an unknown role.
  const AgentConfig* agent(const std::string& role) const;
  const ProviderConfig* provider_for(const std::string& role) const;
};

// The daemon's settings (`kopt run`). To add a key: a member here, one line in
// daemon_config.cc, and (if worth showing) one in describe.cc.
// daemon.workers_per_gpu and --workers-per-gpu: one timing worker per GPU unless asked (more
// did not pay on an H200, docs/gpu-runs/2026-11-28-h200-session8/), at most 8 (each worker is a
// CUDA context).
inline constexpr int64_t kDefaultWorkersPerGpu = 1;
inline constexpr int64_t kMaxWorkersPerGpu = 8;

struct DaemonConfig {
  struct Budgets {
    std::optional<double> hours;                 // wall time of a run
    std::optional<double> max_usd;               // LLM spend of a run
    std::optional<int64_t> candidates_per_task;  // evaluations per task
    std::optional<double> max_usd_per_task;      // LLM spend of one task in a run
    std::optional<double> max_usd_per_hour;      // spend-rate alarm: LLM work waits above it
    std::optional<double> spend_rate_window_s;   // the rate's window (default 600)
  } budgets;
  std::vector<int> gpus;                    // empty: every visible GPU
  std::vector<std::string> worker_command;  // template with {worker} and {gpu}; empty: run locally
  std::string worker;                       // the kopt-sandbox binary; "": the one beside kopt
  // Local timing workers sharing each GPU in turns (sandbox/gpu_turn.h); unset:
  // kDefaultWorkersPerGpu, at most kMaxWorkersPerGpu.
  std::optional<int64_t> workers_per_gpu;
  std::filesystem::path prompts_dir;     // "": $KOPT_PROMPTS, ./prompts, the source tree's
  std::optional<int64_t> max_in_flight;  // concurrent jobs; unset: 2 x GPUs + 2 with an LLM
  bool keep_prompts = true;  // store every prompt and answer (scrubbed, capped) in the memory
  std::optional<int64_t> llm_concurrency;  // model jobs at once; unset: shared with GPU jobs
  std::optional<double> drain_s;           // after SIGINT/SIGTERM, how long work may finish
  // The search loop's knobs (src/orchestrator/run_options.h has the defaults).
  struct Search {
    std::optional<int64_t> beam_width, plans_per_iteration, max_repairs, memory_examples,
        plateau_candidates, tuner_max_configs, warm_start_kernels, plateau_plans, example_draw_seed,
        technique_cards;
    std::optional<double> sol_threshold_percent, exploration, sol_score_threshold;
    std::optional<bool> random_example_slot, screen, screen_time_first;
    std::string score;  // "auto", "sol_score" or "sol_percent" (common/score_basis.h); "": unset
  } search;
  // Noticing a model that stalls (src/orchestrator/stall_detector.h has the defaults).
  struct Stall {
    std::optional<int64_t> window, min_calls, park_dry_calls, planner_stale_answers;
    std::optional<double> min_new_share, park_new_share, backoff_initial_s, backoff_max_s,
        temperature_step;
  } stall;
};

struct Config {
  std::filesystem::path source;         // the file it came from; empty for built-in defaults
  std::filesystem::path database_path;  // default: data_directory()/memory.db
  std::optional<LlmConfig> llm;         // nullopt: no LLM, the daemon uses its built-in tuner
  DaemonConfig daemon;
};

// The configuration used when there is no file.
Config default_config();

// Parses config text; `origin` names the file in messages and anchors relative paths.
Result<Config> parse_config(const std::string& text, const std::filesystem::path& origin);

// Reads and validates a config file; every problem is reported, each with file and JSON path.
Result<Config> load_config(const std::filesystem::path& path);

// $KOPT_CONFIG, else data_directory()/config.json.
std::filesystem::path default_config_path();

// `explicit_path` (or $KOPT_CONFIG) must exist; without either, data_directory()/config.json is
// used when it exists and the built-in defaults (no LLM) when it does not.
Result<Config> load_config_or_defaults(const std::optional<std::filesystem::path>& explicit_path);

// The memory database every command uses (kopt run, status, submit, memory, report, export,
// doctor): `db_flag`, else $KOPT_DB, else `config`'s database.path (data_directory()/memory.db
// when the config does not name one).
std::filesystem::path database_path_for(const std::optional<std::filesystem::path>& db_flag,
                                        const Config& config);
// The same, loading the config first (`config_flag`, else $KOPT_CONFIG, else the default file)
// unless `db_flag` or $KOPT_DB already decides; an error when that config cannot be read.
Result<std::filesystem::path> resolve_database_path(
    const std::optional<std::filesystem::path>& db_flag,
    const std::optional<std::filesystem::path>& config_flag);

// The effective configuration, several lines, safe to log: key variables are named (with
// whether they are set), never their values; URLs lose credentials and query strings.
std::string describe(const Config& config);

// A URL without user:password@ and without its query string, for logs.
std::string redact_url(const std::string& url);

}  // namespace kopt
