#include "tests/orchestrator/orchestrator_test_support.h"

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "common/files.h"
#include "llm/extract.h"

namespace kopt::testing {

std::filesystem::path copy_task(const std::string& name, const std::filesystem::path& root) {
  std::filesystem::path target = root / name;
  std::filesystem::create_directories(root);
  std::filesystem::copy(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks" / name, target,
                        std::filesystem::copy_options::recursive);
  return target;
}

std::string replay_file(const std::string& file) {
  auto text =
      read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tests/orchestrator/replay" / file);
  if (!text) throw std::runtime_error(text.error());
  return *text;
}

std::string replay_kernel(const std::string& file) {
  auto code = extract_code_block(replay_file(file), "cuda");
  if (!code) throw std::runtime_error(file + ": " + code.error());
  return *code;
}

int64_t query_count(const std::filesystem::path& db, const std::string& sql) {
  sql::Database::Options options;
  options.create = false;
  auto database = sql::Database::open(db, options);
  if (!database) return -1;
  auto value = database->query_int64(sql);
  return value ? *value : -1;
}

std::string query_text(const std::filesystem::path& db, const std::string& sql) {
  sql::Database::Options options;
  options.create = false;
  auto database = sql::Database::open(db, options);
  if (!database) return "";
  auto value = database->query_text(sql);
  return value ? *value : "";
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

void isolate_environment(const std::filesystem::path& dir) {
  ::setenv("KOPT_HOME", (dir / "home").c_str(), 1);
  ::setenv("KOPT_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::unsetenv("KOPT_CONFIG");
  ::unsetenv("KOPT_DB");
  ::unsetenv("KOPT_PROMPTS");
}

std::filesystem::path write_llm_config(const std::filesystem::path& dir,
                                       const std::string& base_url, nlohmann::json daemon) {
  nlohmann::json config = {
      {"format", 1},
      {"llm",
       {{"providers",
         {{"fake",
           {{"type", "openai"},
            {"base_url", base_url},
            {"timeout_s", 30},
            {"max_attempts", 2},
            {"backoff_initial_s", 0.1}}}}},
        {"agents",
         {{"planner", {{"provider", "fake"}, {"model", "replay-planner"}}},
          {"coder", {{"provider", "fake"}, {"model", "replay-coder"}}},
          {"summarizer", {{"provider", "fake"}, {"model", "replay-summarizer"}}}}},
        {"prices",
         {{"replay-planner", {{"input_per_mtok", 1.0}, {"output_per_mtok", 2.0}}},
          {"replay-coder", {{"input_per_mtok", 1.0}, {"output_per_mtok", 2.0}}},
          {"replay-summarizer", {{"input_per_mtok", 1.0}, {"output_per_mtok", 2.0}}}}}}}};
  config["daemon"] = std::move(daemon);
  auto path = dir / "config.json";
  if (auto written = write_file_atomic(path, config.dump(2)); !written)
    throw std::runtime_error(written.error());
  return path;
}

}  // namespace kopt::testing
