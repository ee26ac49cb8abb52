#include "sandbox/task_catalog.h"

#include <algorithm>

#include "common/strings.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/kernel_file.h"
#include "sandbox/kernel_file_check.h"
#include "sandbox/task_spec.h"

namespace kopt {

namespace {

// `path` with the error's text, e.g. "tasks/loop: Too many levels of symbolic links".
std::string unreadable(const std::filesystem::path& path, const std::error_code& ec) {
  return path.string() + ": cannot read: " + ec.message();
}

}  // namespace

TaskListing scan_task_dirs(const std::filesystem::path& root) {
  // Every call with an error_code: one unreadable entry must not throw the whole listing away.
  TaskListing listing;
  std::error_code ec;
  std::filesystem::directory_iterator it(root, ec);
  if (ec) {
    listing.error = root.string() + ": cannot list the tasks folder: " + ec.message();
    return listing;
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::filesystem::path& path = it->path();
    std::error_code status_error;
    auto status = std::filesystem::status(path, status_error);  // follows symlinks
    if (status_error) {
      listing.unreadable.push_back({path, unreadable(path, status_error)});
      continue;
    }
    if (!std::filesystem::is_directory(status)) continue;  // README.md and other files
    std::error_code task_error;
    auto task_json = std::filesystem::status(path / "task.json", task_error);
    if (task_json.type() == std::filesystem::file_type::not_found) continue;
    if (task_error) {  // EACCES: a folder the user may not enter
      listing.unreadable.push_back({path, unreadable(path / "task.json", task_error)});
      continue;
    }
    listing.dirs.push_back(path);
  }
  if (ec) listing.error = root.string() + ": listing stopped: " + ec.message();
  std::sort(listing.dirs.begin(), listing.dirs.end());
  std::sort(listing.unreadable.begin(), listing.unreadable.end(),
            [](const UnreadableTask& a, const UnreadableTask& b) { return a.path < b.path; });
  return listing;
}

std::vector<std::filesystem::path> find_task_dirs(const std::filesystem::path& root) {
  return scan_task_dirs(root).dirs;
}

Result<std::filesystem::path> resolve_task_dir(const std::string& arg,
                                               const std::filesystem::path& root) {
  std::filesystem::path direct(arg);
  std::error_code ec;
  if (std::filesystem::is_regular_file(direct / "task.json", ec)) return direct;
  if (arg.find('/') == std::string::npos &&
      std::filesystem::is_regular_file(root / arg / "task.json", ec))
    return root / arg;
  // Not a task: say what the argument is instead.
  std::error_code status_error;
  auto status = std::filesystem::status(direct, status_error);
  if (status_error && status.type() != std::filesystem::file_type::not_found)
    return make_error(unreadable(direct, status_error));
  if (std::filesystem::is_directory(status)) {
    std::error_code task_error;
    auto task_json = std::filesystem::status(direct / "task.json", task_error);
    if (task_error && task_json.type() != std::filesystem::file_type::not_found)
      return make_error(unreadable(direct / "task.json", task_error));
    if (std::filesystem::exists(task_json))
      return make_error((direct / "task.json").string() + ": is not a file");
    return make_error(arg + ": a folder without task.json, not a task folder");
  }
  if (std::filesystem::exists(status))
    return make_error(arg + ": a file, not a task folder (a task folder holds task.json, " +
                      "reference.cu and baseline.cu)");
  std::vector<std::string> names;
  for (const auto& d : find_task_dirs(root)) names.push_back(d.filename().string());
  return make_error("no task '" + arg + "' (not a directory with task.json, nor a task under " +
                    root.string() + ")" + did_you_mean(arg, names));
}

namespace {

void compile_variants(const KernelFile& file, const std::string& label, const std::string& arch,
                      const CompileCache* cache, std::vector<CheckItem>& out) {
  for (const auto& chosen : tunable_variants(file)) {
    std::string subject = label;
    for (const auto& [k, v] : file.tunable_values(chosen))
      subject += " " + k + "=" + std::to_string(v);
    auto compiled = compile_confined(make_compile_request(file, chosen, arch), cache);
    if (!compiled) {
      out.push_back({subject, false, compiled.error()});
    } else if (!compiled->ok) {
      out.push_back({subject, false, "compile error:\n" + compiled->log});
    } else {
      out.push_back({subject, true, compiled->cache_hit ? "compiled (cached)" : "compiled"});
    }
  }
}

}  // namespace

std::vector<CheckItem> compile_check_task(const std::filesystem::path& dir, const std::string& arch,
                                          const CompileCache* cache) {
  std::vector<CheckItem> items;
  // Every problem in one pass: a broken task.json does not hide the kernel files' problems
  // (they are still parsed and compiled, without the task's names to check their plans against).
  auto task = load_task(dir);
  if (!task) {
    items.push_back({"task.json", false, task.error()});
  } else if (auto formulas = check_task_formulas(*task); !formulas) {
    items.push_back({"task.json", false, formulas.error()});
  } else {
    items.push_back({"task.json", true, "valid"});
  }
  for (const char* name : {"reference.cu", "baseline.cu"}) {
    std::error_code ec;
    if (!std::filesystem::exists(dir / name, ec)) continue;  // load_task's message names it
    auto file = load_kernel_file(dir / name, task ? &*task : nullptr);
    if (!file) {
      items.push_back({name, false, file.error()});
      continue;
    }
    // The plan at every shape of the task, before compiling: a block of 4096 threads or a grid
    // of 0 at a small sweep shape is found here rather than on the GPU.
    if (task) {
      if (auto plan = check_plan_variants(*file, *task); !plan) {
        items.push_back({std::string(name) + " plan", false, plan.error()});
      }
    }
    compile_variants(*file, name, arch, cache, items);
  }
  return items;
}

}  // namespace kopt
