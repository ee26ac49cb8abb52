#include "src/orchestrator/run_options.h"

namespace kopt::orchestrator {

using nlohmann::json;

namespace {

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

json RunOptions::to_json() const {
  json dirs = json::array();
  for (const auto& dir : task_dirs) dirs.push_back(dir.string());
  const SearchSettings& s = search;
  return {{"task_dirs", dirs},
          {"budgets",
           {{"hours", optional_json(budgets.hours)},
            {"max_usd", optional_json(budgets.max_usd)},
            {"candidates_per_task", optional_json(budgets.candidates_per_task)},
            {"max_usd_per_task", optional_json(budgets.max_usd_per_task)},
            {"max_usd_per_hour", optional_json(budgets.max_usd_per_hour)}}},
          {"use_llm", use_llm},
          {"max_in_flight", max_in_flight},
          {"search",
           {{"beam_width", s.beam_width},
            {"plans_per_iteration", s.plans_per_iteration},
            {"max_repairs", s.max_repairs},
            {"memory_examples", s.memory_examples},
            {"random_example_slot", s.random_example_slot},
            {"screen", s.screen},
            {"screen_time_first", s.screen_time_first},
            {"technique_cards", s.technique_cards},
            {"sol_threshold_percent", s.sol_threshold_percent},
            {"score", score_basis_name(s.score)},
            {"sol_score_threshold", s.sol_score_threshold},
            {"plateau_candidates", s.plateau_candidates},
            {"tuner_max_configs", s.tuner_max_configs}}}};
}

json run_record_json(const RunOptions& options, const json& extra) {
  json record = extra.is_object() ? extra : json::object();
  record["options"] = options.to_json();
  return record;
}

}  // namespace kopt::orchestrator
