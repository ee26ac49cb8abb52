// Shared by the orchestrator tests: copies of real tasks in a temporary folder, a memory
// database, a fake evaluator, and small readers of what the daemon stored.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "memory_store/memory_store.h"
#include "tests/foundation/test_support.h"

namespace kopt::testing {

// Copies tasks/NAME of the source tree to `root`/NAME and returns the copy's path.
std::filesystem::path copy_task(const std::string& name, const std::filesystem::path& root);

// The replayed LLM answers (tests/orchestrator/replay/FILE).
std::string replay_file(const std::string& file);
// The ```cuda kernel of a replay file.
std::string replay_kernel(const std::string& file);

// One integer from `sql` on a fresh read connection to `db` (-1 when it cannot be read).
int64_t query_count(const std::filesystem::path& db, const std::string& sql);
// One text value from `sql` on a fresh connection ("" when none).
std::string query_text(const std::filesystem::path& db, const std::string& sql);

// Polls `condition` every 50 ms until it holds or `timeout` passes; returns whether it held.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Points $KOPT_HOME and $KOPT_CACHE_DIR into `dir`, so nothing touches the user's files and no
// user config is picked up.
void isolate_environment(const std::filesystem::path& dir);

// A config whose LLM is the fake server at `base_url` (the planner, coder and summarizer as the
// models replay-planner, replay-coder and replay-summarizer), with `daemon` as its daemon section.
std::filesystem::path write_llm_config(const std::filesystem::path& dir,
                                       const std::string& base_url,
                                       nlohmann::json daemon = nlohmann::json::object());

}  // namespace kopt::testing
