// The daemon's logging: spdlog to stderr (through the live display on a terminal) and to a
// rotating file in the run's folder, "<database folder>/runs/<database name>/<run id>/kopt.log"
// (memory.db: runs/memory/1/kopt.log).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "common/result.h"
#include "src/orchestrator/live_display.h"

namespace kopt::orchestrator {

// The run's folder for `database` and `run_id` (created).
Result<std::filesystem::path> run_directory(const std::filesystem::path& database, int64_t run_id);

// Replaces the default logger. `display` may be null (plain stderr). `level` is a spdlog level
// name ("info", "debug"); the file always gets debug.
Status setup_run_logging(const std::filesystem::path& run_dir, std::shared_ptr<LiveDisplay> display,
                         const std::string& level);

}  // namespace kopt::orchestrator
