// Finding tasks on disk, and the compile-only check of a task (parse, validate, compile).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/compiler.h"

namespace kopt {

// Sub-directories of `root` that hold a task.json, sorted by name.
std::vector<std::filesystem::path> find_task_dirs(const std::filesystem::path& root);

// A task argument is a directory path or the name of a task under `root`.
Result<std::filesystem::path> resolve_task_dir(const std::string& arg,
                                               const std::filesystem::path& root);

struct CheckItem {
  std::string subject;  // "reference.cu", "baseline.cu [BLOCK=128]"
  bool ok = false;
  std::string message;  // error text or a short success note
};

// Parses and validates the task and both kernel files, and compiles each kernel file for
// `arch` with its default tunables and with every value of every tunable.
std::vector<CheckItem> compile_check_task(const std::filesystem::path& dir, const std::string& arch,
                                          const CompileCache* cache);

}  // namespace kopt
