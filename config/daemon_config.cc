// The "daemon" section: what `kopt run` uses besides the LLM. Adding a key is one line here and
// a member in DaemonConfig; unknown keys are rejected automatically.
#include <algorithm>

#include "common/score_basis.h"
#include "common/strings.h"
#include "config/config_sections.h"

namespace kopt {

using nlohmann::json;
using Bound = ObjectReader::Bound;

namespace {

// The placeholders a worker command template may use.
const std::vector<std::string> kWorkerPlaceholders = {"worker", "gpu"};

void check_worker_template(JsonReader& reader, const std::string& path,
                           const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
      size_t close = arg.find('}', open);
      std::string item_path = path + "[" + std::to_string(i) + "]";
      if (close == std::string::npos) {
        reader.error(item_path, "unclosed '{' in '" + arg + "'");
        break;
      }
      std::string name = arg.substr(open + 1, close - open - 1);
      if (std::find(kWorkerPlaceholders.begin(), kWorkerPlaceholders.end(), name) ==
          kWorkerPlaceholders.end()) {
        reader.error(item_path, "unknown placeholder {" + name + "}, expected one of {" +
                                    join(kWorkerPlaceholders, "}, {") + "}" +
                                    did_you_mean(name, kWorkerPlaceholders));
      }
    }
  }
}

}  // namespace

DaemonConfig read_daemon_section(JsonReader& reader, const json* section) {
  DaemonConfig d;
  ObjectReader r(reader, section, "$.daemon");

  ObjectReader budgets(reader, r.object("budgets"), "$.daemon.budgets");
  budgets.number("hours", d.budgets.hours, Bound::kPositive);
  budgets.number("max_usd", d.budgets.max_usd, Bound::kNonNegative);
  budgets.integer("candidates_per_task", d.budgets.candidates_per_task, Bound::kPositive);
  budgets.number("max_usd_per_task", d.budgets.max_usd_per_task, Bound::kNonNegative);
  budgets.number("max_usd_per_hour", d.budgets.max_usd_per_hour, Bound::kPositive);
  budgets.number("spend_rate_window_s", d.budgets.spend_rate_window_s, Bound::kPositive);
  budgets.finish();

  r.integer_list("gpus", d.gpus);
  r.string_list("worker_command", d.worker_command);
  check_worker_template(reader, r.path_of("worker_command"), d.worker_command);
  r.string("worker", d.worker);
  r.integer("workers_per_gpu", d.workers_per_gpu, Bound::kPositive);
  if (d.workers_per_gpu && *d.workers_per_gpu > kMaxWorkersPerGpu)
    reader.error(r.path_of("workers_per_gpu"), "must be at most " +
                                                   std::to_string(kMaxWorkersPerGpu) +
                                                   " (each worker is a CUDA context)");
  std::string prompts;
  r.string("prompts_dir", prompts);
  d.prompts_dir = prompts;
  r.integer("max_in_flight", d.max_in_flight, Bound::kPositive);
  r.boolean("keep_prompts", d.keep_prompts);
  r.integer("llm_concurrency", d.llm_concurrency, Bound::kPositive);
  r.number("drain_s", d.drain_s, Bound::kNonNegative);

  ObjectReader search(reader, r.object("search"), "$.daemon.search");
  search.integer("beam_width", d.search.beam_width, Bound::kPositive);
  search.integer("plans_per_iteration", d.search.plans_per_iteration, Bound::kPositive);
  search.integer("max_repairs", d.search.max_repairs, Bound::kNonNegative);
  search.integer("memory_examples", d.search.memory_examples, Bound::kNonNegative);
  search.integer("plateau_candidates", d.search.plateau_candidates, Bound::kPositive);
  search.integer("tuner_max_configs", d.search.tuner_max_configs, Bound::kPositive);
  search.integer("warm_start_kernels", d.search.warm_start_kernels, Bound::kNonNegative);
  search.integer("plateau_plans", d.search.plateau_plans, Bound::kPositive);
  search.number("exploration", d.search.exploration, Bound::kNonNegative);
  search.boolean("random_example_slot", d.search.random_example_slot);
  search.boolean("screen", d.search.screen);
  search.boolean("screen_time_first", d.search.screen_time_first);
  search.integer("example_draw_seed", d.search.example_draw_seed, Bound::kNonNegative);
  search.integer("technique_cards", d.search.technique_cards, Bound::kNonNegative);
  search.number("sol_threshold_percent", d.search.sol_threshold_percent, Bound::kPositive);
  search.choice("score", d.search.score, score_basis_names());
  search.number("sol_score_threshold", d.search.sol_score_threshold, Bound::kPositive);
  search.finish();
  if (d.search.sol_score_threshold && *d.search.sol_score_threshold > 1) {
    reader.error(
        "$.daemon.search.sol_score_threshold",
        "must be at most 1 (S is 1 at the speed of light, 0.5 at the production baseline)");
  }

  ObjectReader stall(reader, r.object("stall"), "$.daemon.stall");
  stall.integer("window", d.stall.window, Bound::kPositive);
  stall.integer("min_calls", d.stall.min_calls, Bound::kPositive);
  stall.integer("park_dry_calls", d.stall.park_dry_calls, Bound::kPositive);
  stall.integer("planner_stale_answers", d.stall.planner_stale_answers, Bound::kPositive);
  stall.number("min_new_share", d.stall.min_new_share, Bound::kNonNegative);
  stall.number("park_new_share", d.stall.park_new_share, Bound::kNonNegative);
  stall.number("backoff_initial_s", d.stall.backoff_initial_s, Bound::kNonNegative);
  stall.number("backoff_max_s", d.stall.backoff_max_s, Bound::kNonNegative);
  stall.number("temperature_step", d.stall.temperature_step, Bound::kNonNegative);
  stall.finish();
  auto share_at_most_one = [&](const std::string& key, const std::optional<double>& share) {
    if (share && *share > 1) reader.error("$.daemon.stall." + key, "must be <= 1");
  };
  share_at_most_one("min_new_share", d.stall.min_new_share);
  share_at_most_one("park_new_share", d.stall.park_new_share);
  if (d.stall.min_new_share && d.stall.park_new_share &&
      *d.stall.park_new_share > *d.stall.min_new_share) {
    reader.error("$.daemon.stall.park_new_share", "must be at most min_new_share");
  }
  if (d.stall.backoff_initial_s && d.stall.backoff_max_s &&
      *d.stall.backoff_max_s < *d.stall.backoff_initial_s) {
    reader.error("$.daemon.stall.backoff_max_s", "must be at least backoff_initial_s");
  }
  r.finish();
  return d;
}

}  // namespace kopt
