#include "src/orchestrator/run_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace kopt::orchestrator {

using nlohmann::json;

std::string SettingOrigin::describe() const {
  switch (source) {
    case SettingSource::kFlag:
      return fmt::format("{} {} (from {})", name, value, flag);
    case SettingSource::kConfig:
      return fmt::format("{} {} (from the config file)", name, value);
    case SettingSource::kSavedRun:
      return fmt::format("{} {} (from the saved run)", name, value);
    case SettingSource::kDefault:
      break;
  }
  return fmt::format("{} {} (default)", name, value);
}

namespace {

template <typename T>
std::string value_text(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : std::string("none");
}

// The config's values over the defaults, each one the config set noted.
class ConfigReader {
 public:
  explicit ConfigReader(std::vector<SettingOrigin>& origins) : origins_(origins) {}

  template <typename Target, typename Value>
  void set(const char* name, Target& target, const std::optional<Value>& value) {
    if (!value) return;
    target = static_cast<Target>(*value);
    origins_.push_back({name, fmt::format("{}", *value), SettingSource::kConfig, ""});
  }
  void set_ms(const char* name, std::chrono::milliseconds& target,
              const std::optional<double>& seconds) {
    if (!seconds) return;
    target = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
    origins_.push_back({name, fmt::format("{}", *seconds), SettingSource::kConfig, ""});
  }

 private:
  std::vector<SettingOrigin>& origins_;
};

void read_search(const DaemonConfig::Search& d, SearchSettings& s, ConfigReader& config) {
  config.set("search.beam_width", s.beam_width, d.beam_width);
  config.set("search.plans_per_iteration", s.plans_per_iteration, d.plans_per_iteration);
  config.set("search.max_repairs", s.max_repairs, d.max_repairs);
  config.set("search.memory_examples", s.memory_examples, d.memory_examples);
  config.set("search.plateau_candidates", s.plateau_candidates, d.plateau_candidates);
  config.set("search.tuner_max_configs", s.tuner_max_configs, d.tuner_max_configs);
  config.set("search.warm_start_kernels", s.warm_start_kernels, d.warm_start_kernels);
  config.set("search.plateau_plans", s.plateau_plans, d.plateau_plans);
  config.set("search.exploration", s.exploration, d.exploration);
  config.set("search.random_example_slot", s.random_example_slot, d.random_example_slot);
  config.set("search.screen", s.screen, d.screen);
  config.set("search.screen_time_first", s.screen_time_first, d.screen_time_first);
  config.set("search.example_draw_seed", s.example_draw_seed, d.example_draw_seed);
  config.set("search.technique_cards", s.technique_cards, d.technique_cards);
  config.set("search.sol_threshold_percent", s.sol_threshold_percent, d.sol_threshold_percent);
  config.set("search.sol_score_threshold", s.sol_score_threshold, d.sol_score_threshold);
}

void read_stall(const DaemonConfig::Stall& d, StallSettings& st, ConfigReader& config) {
  config.set("stall.window", st.window, d.window);
  config.set("stall.min_calls", st.min_calls, d.min_calls);
  config.set("stall.park_dry_calls", st.park_dry_calls, d.park_dry_calls);
  config.set("stall.planner_stale_answers", st.planner_stale_answers, d.planner_stale_answers);
  config.set("stall.min_new_share", st.min_new_share, d.min_new_share);
  config.set("stall.park_new_share", st.park_new_share, d.park_new_share);
  config.set("stall.temperature_step", st.temperature_step, d.temperature_step);
  config.set_ms("stall.backoff_initial_s", st.backoff_initial, d.backoff_initial_s);
  config.set_ms("stall.backoff_max_s", st.backoff_max, d.backoff_max_s);
}

// A budget from the saved run's "budgets" object, when it holds one of the right type.
template <typename T>
std::optional<T> saved_budget(const json* saved, const char* name) {
  if (!saved || !saved->is_object() || !saved->contains("budgets")) return std::nullopt;
  const json& budgets = saved->at("budgets");
  if (!budgets.is_object()) return std::nullopt;
  json value = budgets.value(name, json());
  bool fits = std::is_integral_v<T> ? value.is_number_integer() : value.is_number();
  if (!fits) return std::nullopt;
  return value.get<T>();
}

// One budget: the flag, else the config, else the saved run, else none.
template <typename T>
void resolve_budget(const char* name, const char* flag_name, std::optional<T>& target,
                    const std::optional<T>& flag, const std::optional<T>& config, const json* saved,
                    std::vector<SettingOrigin>& origins) {
  SettingOrigin origin{name, "", SettingSource::kDefault, ""};
  if (flag) {
    target = flag;
    origin.source = SettingSource::kFlag;
    origin.flag = flag_name;
  } else if (config) {
    target = config;
    origin.source = SettingSource::kConfig;
  } else if (auto kept = saved_budget<T>(saved, name)) {
    target = kept;
    origin.source = SettingSource::kSavedRun;
  } else {
    target = std::nullopt;
  }
  origin.value = value_text(target);
  origins.push_back(std::move(origin));
}

void resolve_budgets(const DaemonConfig::Budgets& config, const SettingFlags& flags,
                     const json* saved, Budgets& b, std::vector<SettingOrigin>& origins) {
  resolve_budget("hours", "--hours", b.hours, flags.hours, config.hours, saved, origins);
  resolve_budget("max_usd", "--max-usd", b.max_usd, flags.max_usd, config.max_usd, saved, origins);
  resolve_budget("candidates_per_task", "--candidates-per-task", b.candidates_per_task,
                 flags.candidates_per_task, config.candidates_per_task, saved, origins);
  resolve_budget("max_usd_per_task", "--max-usd-per-task", b.max_usd_per_task,
                 flags.max_usd_per_task, config.max_usd_per_task, saved, origins);
  resolve_budget("max_usd_per_hour", "--max-usd-per-hour", b.max_usd_per_hour,
                 flags.max_usd_per_hour, config.max_usd_per_hour, saved, origins);
}

void resolve_score(const DaemonConfig& config, const SettingFlags& flags, SearchSettings& s,
                   std::vector<SettingOrigin>& origins) {
  SettingOrigin origin{"score", "", SettingSource::kDefault, ""};
  // The config reader accepted only the names parse_score_basis knows.
  if (flags.score) {
    s.score = *flags.score;
    origin.source = SettingSource::kFlag;
    origin.flag = "--score";
  } else if (auto basis = parse_score_basis(config.search.score)) {
    s.score = *basis;
    origin.source = SettingSource::kConfig;
  }
  origin.value = score_basis_name(s.score);
  origins.push_back(std::move(origin));
}

// Workers per GPU: the flag, else the config, else the default; one through a worker template.
void resolve_workers_per_gpu(const DaemonConfig& config, const SettingFlags& flags,
                             ResolvedSettings& resolved) {
  SettingOrigin origin{"workers_per_gpu", "", SettingSource::kDefault, ""};
  int64_t k = kDefaultWorkersPerGpu;
  if (flags.workers_per_gpu) {
    k = *flags.workers_per_gpu;
    origin.source = SettingSource::kFlag;
    origin.flag = "--workers-per-gpu";
  } else if (config.workers_per_gpu) {
    k = *config.workers_per_gpu;
    origin.source = SettingSource::kConfig;
  }
  if (k > 1 && !config.worker_command.empty()) {
    resolved.workers_note = "daemon.worker_command: one worker per GPU (workers_per_gpu " +
                            std::to_string(k) + " is for local workers)";
    k = 1;
    origin = {"workers_per_gpu", "", SettingSource::kConfig, ""};
  }
  resolved.workers_per_gpu = k;
  origin.value = std::to_string(k);
  resolved.origins.push_back(std::move(origin));
}

// A resumed run goes on with its saved task folders, plus the flags' new ones; a new run takes
// the flags' folders as they are.
std::vector<std::filesystem::path> resolve_task_dirs(const SettingFlags& flags, const json* saved) {
  if (!saved) return flags.task_dirs;
  std::vector<std::filesystem::path> dirs;
  if (saved->is_object() && saved->contains("task_dirs") && saved->at("task_dirs").is_array()) {
    for (const json& dir : saved->at("task_dirs")) {
      if (dir.is_string()) dirs.emplace_back(dir.get<std::string>());
    }
  }
  for (const auto& dir : flags.task_dirs) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

}  // namespace

ResolvedSettings resolve_run_settings(const DaemonConfig& config, const SettingFlags& flags,
                                      const json* saved) {
  ResolvedSettings resolved;
  RunOptions& options = resolved.options;
  std::vector<SettingOrigin>& origins = resolved.origins;
  resolve_budgets(config.budgets, flags, saved, options.budgets, origins);
  resolve_score(config, flags, options.search, origins);
  resolve_workers_per_gpu(config, flags, resolved);
  ConfigReader from_config(origins);
  read_search(config.search, options.search, from_config);
  from_config.set("llm_concurrency", options.llm_concurrency, config.llm_concurrency);
  from_config.set("max_in_flight", options.max_in_flight, config.max_in_flight);
  from_config.set("drain_s", options.drain_seconds, config.drain_s);
  from_config.set("budgets.spend_rate_window_s", options.budgets.spend_rate_window_s,
                  config.budgets.spend_rate_window_s);
  read_stall(config.stall, options.stall, from_config);
  options.keep_prompts = config.keep_prompts;
  options.task_dirs = resolve_task_dirs(flags, saved);
  return resolved;
}

}  // namespace kopt::orchestrator
