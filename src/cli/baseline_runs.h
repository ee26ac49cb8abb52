// Measuring production baselines (memory_store/production_baselines.h) for tasks, stored in the
// memory: cuBLASLt by the kopt-sandbox worker itself (sandbox/worker/cublaslt_baseline.h: CUPTI,
// cold L2, the busy-GPU check, exactly as candidates are timed), then PyTorch eager and
// torch.compile through the helper scripts/torch_baselines.py, which kopt starts once the worker
// has exited and waits for (nothing else of kopt uses the GPU meanwhile, so no candidate is ever
// timed beside it). Shared by `kopt baselines` and `kopt tasks check --baselines`.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memory_store/memory_store.h"
#include "memory_store/production_baselines.h"
#include "sandbox/evaluator.h"
#include "sandbox/task_spec.h"

namespace kopt::cli {

struct BaselineRunOptions {
  std::string python = "python3";
  std::filesystem::path helper;  // scripts/torch_baselines.py
  bool torch_compile = true;
  bool torch = true;         // false: no PyTorch helper (cuBLASLt only)
  SandboxOptions worker;     // the worker that times cuBLASLt
};

// The helper next to the source tree the binary came from, or under KOPT_SOURCE_DIR.
std::filesystem::path default_torch_helper();

struct BaselineRunReport {
  std::vector<memory::ProductionBaselineRecord> stored;
  std::vector<std::string> problems;  // one line each: a task's error, a missing library
};

// Parses the helper's JSON lines into rows for `tasks` (matched by name; the spec hash taken
// from the task). Lines that are errors become problems. Apart for the tests.
BaselineRunReport parse_helper_output(const std::string& stdout_text,
                                      const std::vector<TaskSpec>& tasks);

// Turns the worker's answer to a "cublaslt" request into rows for `task` (apart for the tests).
BaselineRunReport parse_cublaslt_answer(const nlohmann::json& result, const TaskSpec& task);

// Runs the helper for the tasks that declare production baselines, stores what it measured, and
// says what was not measured and why.
BaselineRunReport measure_production_baselines(memory::MemoryStore& store,
                                               const std::vector<TaskSpec>& tasks,
                                               const BaselineRunOptions& options);

}  // namespace kopt::cli
