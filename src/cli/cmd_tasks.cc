// kopt tasks list | check [--compile-only]
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_scaffold.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/options.h"
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
    for (const auto& [k, v] : task->sizes)
      sizes += (sizes.empty() ? "" : " ") + k + "=" + std::to_string(v);
    if (as_json) {
      out.push_back({{"name", task->name},
                     {"dir", dir.string()},
                     {"tags", task->tags},
                     {"sizes", task->sizes},
                     {"description", task->description}});
    } else {
      std::printf("%-24s %-40s %s\n", task->name.c_str(), sizes.c_str(),
                  [&] {
                    std::string t;
                    for (auto& s : task->tags) t += (t.empty() ? "" : ",") + s;
                    return t;
                  }()
                      .c_str());
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
  std::vector<std::filesystem::path> sound;
  for (const auto& dir : dirs) {
    auto items = compile_check_task(dir, arch, &cache);
    bool ok = true;
    for (const auto& item : items) ok = ok && item.ok;
    std::printf("%-4s %s (%s)\n", ok ? "ok" : "FAIL", dir.filename().c_str(), arch.c_str());
    for (const auto& item : items) {
      if (item.ok) continue;
      // Multi-line messages (one problem per line) stay indented under their task.
      std::string message = item.message;
      for (size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 7))
        message.replace(at, 1, "\n       ");
      std::printf("     %s: %s\n", item.subject.c_str(), message.c_str());
    }
    failed_tasks += ok ? 0 : 1;
    if (ok) sound.push_back(dir);
  }
  std::printf("%zu tasks, %d failed compile checks\n", dirs.size(), failed_tasks);
  if (compile_only || sound.empty()) return failed_tasks ? 1 : 0;
  // The tasks that compiled still get their GPU checks: every problem in one pass.
  int gpu = run_gpu_task_checks(sound, worker);
  return failed_tasks ? 1 : gpu;
}

int new_task(const std::filesystem::path& root, const std::vector<std::string>& names,
             const std::string& kind, const std::string& like) {
  if (names.size() != 1) {
    std::cerr << "kopt tasks new: give one task name (kopt tasks new NAME --like TASK | --kind "
              << join(task_template_kinds(), "|") << ")\n";
    return 2;
  }
  std::filesystem::path like_dir;
  if (!like.empty()) {
    auto found = resolve_task_dir(like, root);
    if (!found) {
      std::cerr << "kopt tasks new: --like: " << found.error() << "\n";
      return 2;
    }
    like_dir = *found;
  }
  auto dir = write_new_task(root, names[0], kind, like_dir);
  if (!dir) {
    std::cerr << "kopt tasks new: " << dir.error() << "\n";
    return 1;
  }
  std::printf("wrote %s (task.json, reference.cu, baseline.cu)\n", dir->c_str());
  std::printf(
      "next: edit the TODOs (tasks/README.md, \"Adding a task\"), then\n"
      "  kopt tasks check --compile-only %s\n  kopt tasks check %s   (on a GPU)\n",
      dir->c_str(), dir->c_str());
  return 0;
}

}  // namespace

int run_tasks(int argc, char** argv) {
  cxxopts::Options options("kopt tasks",
                           "list tasks, check them, or start a new one\n  kopt tasks list\n  kopt "
                           "tasks check [--compile-only] [TASK...]\n  kopt tasks new NAME --like "
                           "TASK | --kind elementwise|row_reduction|gemm");
  options.add_options()("action", "list | check", cxxopts::value<std::string>())(
      "names", "tasks to check", cxxopts::value<std::vector<std::string>>())(
      "tasks", "folder of task directories", cxxopts::value<std::string>())(
      "compile-only", "parse, validate and compile only (no GPU needed)")(
      "arch", "target architecture when compiling (default: the GPU's, else sm_90a)",
      cxxopts::value<std::string>()->default_value(""))("json", "machine-readable output")(
      "like", "tasks new: copy this task", cxxopts::value<std::string>()->default_value(""))(
      "kind", "tasks new: start from a template (elementwise, row_reduction, gemm)",
      cxxopts::value<std::string>()->default_value(""))(
      "baselines", "tasks check: then measure the production baselines into --db (kopt baselines)")(
      "db", "tasks check --baselines: the memory database", cxxopts::value<std::string>());
  add_sandbox_flags(options);
  options.parse_positional({"action", "names"});
  options.positional_help("list|check [TASK...]|new NAME");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  std::filesystem::path root = args->count("tasks")
                                   ? std::filesystem::path((*args)["tasks"].as<std::string>())
                                   : default_tasks_root();
  std::string action = args->count("action") ? (*args)["action"].as<std::string>() : "list";
  if (action == "list") return list_tasks(root, args->count("json") > 0);
  if (action == "check") {
    std::vector<std::string> names;
    if (args->count("names")) names = (*args)["names"].as<std::vector<std::string>>();
    int checked = check_tasks(root, names, args->count("compile-only") > 0,
                              (*args)["arch"].as<std::string>(), sandbox_options_from(*args));
    if (checked != 0 || !args->count("baselines") || args->count("compile-only")) return checked;
    // After the GPU checks, whose worker has exited: the helper has the GPU to itself.
    std::vector<std::string> forward = {"baselines", "--tasks", root.string()};
    if (args->count("db")) forward.insert(forward.end(), {"--db", (*args)["db"].as<std::string>()});
    forward.insert(forward.end(), names.begin(), names.end());
    std::vector<char*> forward_argv;
    for (auto& word : forward) forward_argv.push_back(word.data());
    return run_baselines(static_cast<int>(forward_argv.size()), forward_argv.data());
  }
  if (action == "new") {
    std::vector<std::string> names;
    if (args->count("names")) names = (*args)["names"].as<std::vector<std::string>>();
    return new_task(root, names, (*args)["kind"].as<std::string>(),
                    (*args)["like"].as<std::string>());
  }
  std::cerr << "kopt tasks: unknown action '" << action << "' (list, check or new)\n";
  return 2;
}

}  // namespace kopt::cli
