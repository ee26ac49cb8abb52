// Finding tasks on disk, and the compile-only check of a task (parse, validate, compile).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/compiler.h"

namespace kopt {

// An entry under a tasks folder that may be a task but cannot be read (a symlink loop, a folder
// the user may not read), and why, naming the path.
struct UnreadableTask {
  std::filesystem::path path;
  std::string reason;
};

// What a tasks folder holds: the task folders (sorted by name) and the entries that could not be
// read. One bad entry is one failed task, never the end of the listing; `error` says why the
// folder itself cannot be listed (then both lists are empty).
struct TaskListing {
  std::vector<std::filesystem::path> dirs;
  std::vector<UnreadableTask> unreadable;
  std::string error;
};
TaskListing scan_task_dirs(const std::filesystem::path& root);

// Sub-directories of `root` that hold a task.json, sorted by name (unreadable entries left out).
std::vector<std::filesystem::path> find_task_dirs(const std::filesystem::path& root);

// A task argument is a directory path or the name of a task under `root`. The error says what the
// argument is instead (a file, a folder without task.json, a path that cannot be read).
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
