// kopt tasks list | check [--compile-only]
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/options.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/sandbox_flags.h"

namespace kopt::cli {
namespace {

int list_tasks(const std::filesystem::path& root, bool as_json) {
  auto dirs = find_task_dirs(root);
  nlohmann::json out = nlohmann::json::array();
  int failures = 0;
  for (const auto& dir : dirs) {
    auto task = load_task(dir);
    if (!task) {
      std::cerr << task.error() << "\n";
      ++failures;
      continue;
    }
    std::string sizes;
    for (const auto& [k, v] : task->sizes) sizes += (sizes.empty() ? "" : " ") + k + "=" + std::to_string(v);
    if (as_json) {
      out.push_back({{"name", task->name}, {"dir", dir.string()}, {"tags", task->tags},
                     {"sizes", task->sizes}, {"description", task->description}});
    } else {
      std::printf("%-24s %-40s %s\n", task->name.c_str(), sizes.c_str(),
                  [&] { std::string t; for (auto& s : task->tags) t += (t.empty() ? "" : ",") + s; return t; }().c_str());
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  if (dirs.empty()) {
    std::cerr << "kopt tasks: no tasks under " << root.string() << "\n";
    return 1;
  }
  return failures ? 1 : 0;
}

int check_tasks(const std::filesystem::path& root, const std::vector<std::string>& names,
                bool compile_only, const std::string& arch_option, const SandboxOptions& worker) {
  std::vector<std::filesystem::path> dirs;
  if (names.empty()) {
    dirs = find_task_dirs(root);
  } else {
    for (const auto& n : names) {
      auto d = resolve_task_dir(n, root);
      if (!d) {
        std::cerr << "kopt tasks check: " << d.error() << "\n";
        return 2;
      }
      dirs.push_back(*d);
    }
  }
  if (dirs.empty()) {
    std::cerr << "kopt tasks check: no tasks under " << root.string() << "\n";
    return 1;
  }
  std::string arch = arch_option;
  if (arch.empty()) {
    auto detected = detect_gpu_arch();
    arch = detected ? *detected : "sm_90a";
  }
  CompileCache cache(cache_directory() / "compile");
  int failed_tasks = 0;
  for (const auto& dir : dirs) {
    auto items = compile_check_task(dir, arch, &cache);
    bool ok = true;
    for (const auto& item : items) ok = ok && item.ok;
    std::printf("%-4s %s (%s)\n", ok ? "ok" : "FAIL", dir.filename().c_str(), arch.c_str());
    for (const auto& item : items) {
      if (!item.ok) std::printf("     %s: %s\n", item.subject.c_str(), item.message.c_str());
    }
    failed_tasks += ok ? 0 : 1;
  }
  std::printf("%zu tasks, %d failed compile checks\n", dirs.size(), failed_tasks);
  if (failed_tasks) return 1;
  if (compile_only) return 0;
  return run_gpu_task_checks(dirs, worker);
}

}  // namespace

int run_tasks(int argc, char** argv) {
  cxxopts::Options options("kopt tasks", "list tasks, or check them\n  kopt tasks list\n  kopt tasks check [--compile-only] [TASK...]");
  options.add_options()("action", "list | check", cxxopts::value<std::string>())(
      "names", "tasks to check", cxxopts::value<std::vector<std::string>>())(
      "tasks", "folder of task directories", cxxopts::value<std::string>())(
      "compile-only", "parse, validate and compile only (no GPU needed)")(
      "arch", "target architecture when compiling (default: the GPU's, else sm_90a)",
      cxxopts::value<std::string>()->default_value(""))("json", "machine-readable output");
  add_sandbox_flags(options);
  options.parse_positional({"action", "names"});
  options.positional_help("list|check [TASK...]");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  std::filesystem::path root =
      args->count("tasks") ? std::filesystem::path((*args)["tasks"].as<std::string>()) : default_tasks_root();
  std::string action = args->count("action") ? (*args)["action"].as<std::string>() : "list";
  if (action == "list") return list_tasks(root, args->count("json") > 0);
  if (action == "check") {
    std::vector<std::string> names;
    if (args->count("names")) names = (*args)["names"].as<std::vector<std::string>>();
    return check_tasks(root, names, args->count("compile-only") > 0, (*args)["arch"].as<std::string>(),
                       sandbox_options_from(*args));
  }
  std::cerr << "kopt tasks: unknown action '" << action << "' (list or check)\n";
  return 2;
}

}  // namespace kopt::cli
