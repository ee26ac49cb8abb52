// Shared fixtures for the foundation tests: a known-good task and kernel file to mutate one field
// at a time, and a runner for the real `kopt` binary. TempDir comes from tests/support.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "tests/support/temp_dir.h"

namespace kopt::testing {

// Writes `text` to `path`, creating parent directories; throws on failure (a broken test setup).
void write_text(const std::filesystem::path& path, const std::string& text);

// A valid task.json (axpy-like: sizes n, constant alpha, inputs x and y, output out).
nlohmann::json good_task_json();

// A valid kernel file for good_task_json(), with a tunable BLOCK.
std::string good_kernel_source();

// Writes dir/task.json, dir/reference.cu and dir/baseline.cu.
void write_task_dir(const std::filesystem::path& dir, const nlohmann::json& task,
                    const std::string& reference = good_kernel_source(),
                    const std::string& baseline = good_kernel_source());

// Runs the real kopt binary with `args`, with the compile cache in `cache_dir`.
CommandOutput run_kopt(const std::vector<std::string>& args, const std::filesystem::path& cache_dir,
                       std::chrono::seconds timeout = std::chrono::seconds(120));

// True when `text` contains `needle`, for readable EXPECT_TRUE with a message.
bool contains(const std::string& text, const std::string& needle);

}  // namespace kopt::testing
