// One place where a run's settings are decided (ccache's model): the config file's daemon
// section, the command line and, when resuming, the run as it was saved, resolved by one pure
// function that also says where each value came from, so that the daemon can print
// `max_usd 20 (from --max-usd)` at start-up.
//
// Precedence, for each value: the command line, then the config file, then the saved run (the
// budgets only: a resumed run goes on with the budgets it began with unless told otherwise),
// then the default in run_options.h. The score basis and the search and stall knobs are never
// read back from a saved run: they come from the flags, the config or the defaults.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/score_basis.h"
#include "config/config.h"
#include "src/orchestrator/run_options.h"

namespace kopt::orchestrator {

// The command line's part in the settings (DaemonInvocation's values; nullopt: not given).
struct SettingFlags {
  std::optional<double> hours;
  std::optional<double> max_usd;
  std::optional<int64_t> candidates_per_task;
  std::optional<double> max_usd_per_task;
  std::optional<double> max_usd_per_hour;
  std::optional<ScoreBasis> score;
  std::optional<int64_t> workers_per_gpu;        // --workers-per-gpu
  std::vector<std::filesystem::path> task_dirs;  // --tasks, already resolved to task folders
};

// Where an effective value came from.
enum class SettingSource { kDefault, kConfig, kFlag, kSavedRun };

struct SettingOrigin {
  std::string name;   // "max_usd", "search.beam_width"
  std::string value;  // as printed: "20", "8", "none"
  SettingSource source = SettingSource::kDefault;
  std::string flag;  // the command-line flag, for kFlag: "--max-usd"

  // "max_usd 20 (from --max-usd)", "hours 8 (from the saved run)".
  std::string describe() const;
};

struct ResolvedSettings {
  RunOptions options;
  // Timing workers sharing each GPU: one per GPU through daemon.worker_command (each worker a
  // job of its own, srun or ssh), whatever the flag or the key asks.
  int64_t workers_per_gpu = kDefaultWorkersPerGpu;
  std::string workers_note;  // why a template's workers stay one per GPU ("" otherwise)
  // The budgets, the score, workers_per_gpu and every value the config set.
  std::vector<SettingOrigin> origins;
};

// Resolves the run's options. `saved` is the saved run's "options" object when resuming (its
// task folders come first, then the flags' new ones); nullptr for a new run. Pure: reads no
// file, no environment, no clock.
ResolvedSettings resolve_run_settings(const DaemonConfig& config, const SettingFlags& flags,
                                      const nlohmann::json* saved);

}  // namespace kopt::orchestrator
