// kopt tasks list | check [--compile-only] | new | import
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/strings.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_scaffold.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/options.h"
#include "src/cli/sandbox_flags.h"
#include "src/cli/task_import.h"

namespace kopt::cli {
namespace {

// Bad entries under the root (a symlink loop, a folder the user may not read) are one failed
// task each, named with their reason on stderr; the others are still listed.
int list_tasks(const std::filesystem::path& root, bool as_json) {
  TaskListing listing = scan_task_dirs(root);
  nlohmann::json out = nlohmann::json::array();
  int failures = 0;
  for (const auto& bad : listing.unreadable) {
    std::cerr << "kopt tasks: " << bad.reason << "\n";
    ++failures;
  }
  for (const auto& dir : listing.dirs) {
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
                  join(task->tags, ",").c_str());
    }
  }
  if (as_json) std::cout << dump_json_ascii(out, 2) << "\n";
  if (!listing.error.empty()) {
    std::cerr << "kopt tasks: " << listing.error << "\n";
    return 1;
  }
  if (listing.dirs.empty() && listing.unreadable.empty()) {
    std::cerr << "kopt tasks: no tasks under " << root.string() << "\n";
    return 1;
  }
  return failures ? 1 : 0;
}

// One task's compile-only result: its folder and the checks it went through.
struct TaskCheck {
  std::filesystem::path dir;
  std::vector<CheckItem> items;
  bool ok() const {
    for (const auto& item : items)
      if (!item.ok) return false;
    return true;
  }
};

void print_task_check(const TaskCheck& check, const std::string& arch) {
  std::printf("%-4s %s (%s)\n", check.ok() ? "ok" : "FAIL", check.dir.filename().c_str(),
              arch.c_str());
  for (const auto& item : check.items) {
    if (item.ok) continue;
    // Multi-line messages (one problem per line) stay indented under their task.
    std::string message = item.message;
    for (size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 7))
      message.replace(at, 1, "\n       ");
    std::printf("     %s: %s\n", item.subject.c_str(), message.c_str());
  }
}

nlohmann::json task_check_json(const TaskCheck& check) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& item : check.items)
    items.push_back({{"subject", item.subject}, {"ok", item.ok}, {"message", item.message}});
  return {{"task", check.dir.filename().string()},
          {"dir", check.dir.string()},
          {"ok", check.ok()},
          {"checks", items}};
}

// Two folders whose task.json give one name: the daemon takes the first and refuses the other,
// so the check fails both, each naming the other folder.
void flag_duplicate_names(std::vector<TaskCheck>& checks) {
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (auto spec = load_task(checks[i].dir)) by_name[spec->name].push_back(i);
  }
  for (const auto& [name, indices] : by_name) {
    if (indices.size() < 2) continue;
    for (size_t i : indices) {
      std::vector<std::string> others;
      for (size_t j : indices) {
        if (j != i) others.push_back(checks[j].dir.string());
      }
      checks[i].items.push_back({"task.json", false,
                                 "the task name \"" + name + "\" is also given by " +
                                     join(others, ", ") +
                                     " (one run takes one task of a name: rename one)"});
    }
  }
}

int check_tasks(const std::filesystem::path& root, const std::vector<std::string>& names,
                bool compile_only, bool as_json, const std::string& arch_option,
                const SandboxOptions& worker) {
  CommandFailure fail{as_json};
  std::vector<TaskCheck> checks;  // in order; unreadable entries are failed checks
  std::vector<std::filesystem::path> dirs;
  if (names.empty()) {
    TaskListing listing = scan_task_dirs(root);
    if (!listing.error.empty()) return fail(1, "kopt tasks check: " + listing.error);
    for (const auto& bad : listing.unreadable)
      checks.push_back({bad.path, {{"folder", false, bad.reason}}});
    dirs = listing.dirs;
  } else {
    for (const auto& n : names) {
      auto d = resolve_task_dir(n, root);
      if (!d) return fail(2, "kopt tasks check: " + d.error());
      dirs.push_back(*d);
    }
  }
  if (dirs.empty() && checks.empty()) {
    return fail(1, "kopt tasks check: no tasks under " + root.string());
  }
  std::string arch = arch_option;
  if (arch.empty()) {
    auto detected = detect_gpu_arch();
    arch = detected ? *detected : "sm_90a";
  }
  CompileCache cache(cache_directory() / "compile");
  for (const auto& dir : dirs) checks.push_back({dir, compile_check_task(dir, arch, &cache)});
  // A whole folder in name order, the unreadable entries among the others; named tasks as given.
  if (names.empty()) {
    std::sort(checks.begin(), checks.end(),
              [](const TaskCheck& a, const TaskCheck& b) { return a.dir < b.dir; });
  }
  flag_duplicate_names(checks);
  int failed_tasks = 0;
  std::vector<std::filesystem::path> sound;
  nlohmann::json tasks_json = nlohmann::json::array();
  for (const auto& check : checks) {
    if (as_json) {
      tasks_json.push_back(task_check_json(check));
    } else {
      print_task_check(check, arch);
    }
    failed_tasks += check.ok() ? 0 : 1;
    if (check.ok()) sound.push_back(check.dir);
  }
  nlohmann::json out = {
      {"arch", arch}, {"tasks", tasks_json}, {"failed_compile_checks", failed_tasks}};
  if (!as_json) std::printf("%zu tasks, %d failed compile checks\n", checks.size(), failed_tasks);
  int code = failed_tasks ? 1 : 0;
  // The tasks that compiled still get their GPU checks: every problem in one pass.
  if (!compile_only && !sound.empty()) {
    int gpu = run_gpu_task_checks(sound, worker, as_json ? &out : nullptr);
    code = failed_tasks ? 1 : gpu;
  }
  if (as_json) {
    out["exit_code"] = code;
    std::cout << dump_json_ascii(out, 2) << "\n";
  }
  return code;
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

// `kopt tasks check`, then (with --baselines, after a full check) `kopt baselines` on the same
// tasks, database and worker.
int check_then_baselines(const cxxopts::ParseResult& args, const std::filesystem::path& root) {
  std::vector<std::string> names;
  if (args.count("names")) names = args["names"].as<std::vector<std::string>>();
  int checked = check_tasks(root, names, args.count("compile-only") > 0, args.count("json") > 0,
                            args["arch"].as<std::string>(), sandbox_options_from(args));
  if (checked != 0 || !args.count("baselines") || args.count("compile-only")) return checked;
  // After the GPU checks, whose worker has exited: the helper has the GPU to itself.
  std::vector<std::string> forward = {"baselines", "--tasks", root.string()};
  if (args.count("db")) forward.insert(forward.end(), {"--db", args["db"].as<std::string>()});
  // The same worker times cuBLASLt as ran the checks.
  for (const char* flag : {"worker", "worker-prefix"}) {
    if (args.count(flag))
      forward.insert(forward.end(), {std::string("--") + flag, args[flag].as<std::string>()});
  }
  if (args.count("device"))
    forward.insert(forward.end(), {"--device", std::to_string(args["device"].as<int>())});
  forward.insert(forward.end(), names.begin(), names.end());
  std::vector<char*> forward_argv;
  for (auto& word : forward) forward_argv.push_back(word.data());
  return run_baselines(static_cast<int>(forward_argv.size()), forward_argv.data());
}

// `kopt tasks import`: the request its flags describe.
int import_from_args(const cxxopts::ParseResult& args, const std::filesystem::path& root) {
  ImportRequest request;
  if (args.count("names")) request.files = args["names"].as<std::vector<std::string>>();
  request.tasks_root = root;
  request.name = args["name"].as<std::string>();
  request.reference = args["reference"].as<std::string>();
  request.function = args["function"].as<std::string>();
  request.references = args["references"].as<std::string>();
  request.kernelbench = args.count("kernelbench") > 0;
  request.arch = args["arch"].as<std::string>();
  return import_tasks(request);
}

}  // namespace

int run_tasks(int argc, char** argv) {
  cxxopts::Options options("kopt tasks",
                           "list tasks, check them, or start a new one\n  kopt tasks list\n  kopt "
                           "tasks check [--compile-only] [TASK...]\n  kopt tasks new NAME --like "
                           "TASK | --kind elementwise|row_reduction|gemm\n  kopt tasks import "
                           "FILE.py --reference reference.cu [--name N] [--function F]\n  kopt "
                           "tasks import --kernelbench FILE... [--references DIR]");
  options.add_options()("action", "list | check | new | import", cxxopts::value<std::string>())(
      "names", "tasks to check (import: problem files)",
      cxxopts::value<std::vector<std::string>>())("tasks", "folder of task directories",
                                                  cxxopts::value<std::string>())(
      "compile-only", "parse, validate and compile only (no GPU needed)")(
      "arch", "target architecture when compiling (default: the GPU's, else sm_90a)",
      cxxopts::value<std::string>()->default_value(""))("json", "machine-readable output")(
      "like", "tasks new: copy this task", cxxopts::value<std::string>()->default_value(""))(
      "kind", "tasks new: start from a template (elementwise, row_reduction, gemm)",
      cxxopts::value<std::string>()->default_value(""))(
      "name", "tasks import: the task's name (default: the file's stem)",
      cxxopts::value<std::string>()->default_value(""))(
      "reference",
      "tasks import: the reference kernel file, validated against the module (default: drafted "
      "by the configured coder model)",
      cxxopts::value<std::string>()->default_value(""))(
      "function", "tasks import: a function of the file instead of class Model",
      cxxopts::value<std::string>()->default_value(""))(
      "kernelbench", "tasks import: many KernelBench problem files, each said imported or why not")(
      "references", "tasks import --kernelbench: folder holding <problem stem>.cu",
      cxxopts::value<std::string>()->default_value(""))(
      "baselines", "tasks check: then measure the production baselines into --db (kopt baselines)")(
      "db", "tasks check --baselines: the memory database", cxxopts::value<std::string>());
  add_sandbox_flags(options);
  add_positionals(options, {"action", "names"}, "list|check [TASK...]|new NAME|import FILE...");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  std::filesystem::path root = args->count("tasks")
                                   ? std::filesystem::path((*args)["tasks"].as<std::string>())
                                   : default_tasks_root();
  std::string action = args->count("action") ? (*args)["action"].as<std::string>() : "list";
  if (action == "list") return list_tasks(root, args->count("json") > 0);
  if (action == "check") return check_then_baselines(*args, root);
  if (action == "new") {
    std::vector<std::string> names;
    if (args->count("names")) names = (*args)["names"].as<std::vector<std::string>>();
    return new_task(root, names, (*args)["kind"].as<std::string>(),
                    (*args)["like"].as<std::string>());
  }
  if (action == "import") return import_from_args(*args, root);
  std::cerr << "kopt tasks: unknown action '" << action << "' (list, check, new or import)\n";
  return 2;
}

}  // namespace kopt::cli
