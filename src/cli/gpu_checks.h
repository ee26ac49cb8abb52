// GPU-side hooks of the CLI, kept in one place so commands stay readable.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/evaluator.h"

namespace kopt::cli {

// "sm_90a" for the first GPU when a driver and a GPU are present, else nullopt.
std::optional<std::string> detect_gpu_arch();

// The GPU part of `kopt tasks check`: reference hygiene and baseline agreement per task, run by
// the kopt-sandbox worker. Returns the exit code (0 when every task is sound). Prints text, or
// with `json_out` adds "gpu_checks" (and "gpu_error" when the checks cannot run) to it instead.
int run_gpu_task_checks(const std::vector<std::filesystem::path>& task_dirs,
                        const SandboxOptions& worker, nlohmann::json* json_out = nullptr);

}  // namespace kopt::cli
