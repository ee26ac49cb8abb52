// `kopt tasks new`: writes a task folder to edit (task.json, reference.cu, baseline.cu), either a
// copy of an existing task or one of a few templates, that passes `kopt tasks check
// --compile-only` as written and carries TODO notes where the author must decide.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

// The template kinds: "elementwise", "row_reduction", "gemm".
const std::vector<std::string>& task_template_kinds();

// The three files of template `kind` for a task called `name`: {file name, text}.
Result<std::vector<std::pair<std::string, std::string>>> task_template(const std::string& kind,
                                                                       const std::string& name);

// Writes `root/name` from template `kind`, or as a copy of the task folder `like` (renamed, with
// TODO notes). Refuses a bad name and a folder that exists. Returns the folder written.
Result<std::filesystem::path> write_new_task(const std::filesystem::path& root,
                                             const std::string& name, const std::string& kind,
                                             const std::filesystem::path& like);

}  // namespace kopt
