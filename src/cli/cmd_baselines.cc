// kopt baselines [TASK...] [--list] [--json]: measure what users run for each task (cuBLASLt,
// timed by the kopt-sandbox worker, where the task declares it; PyTorch eager and torch.compile
// through a helper) on this machine's GPU and keep it in the
// memory, so that status, memory wins --vs production, the report and the export can say how a
// kernel compares (src/cli/baseline_runs.h says how).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "sandbox/task_catalog.h"
#include "src/cli/baseline_runs.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/cli/sandbox_flags.h"

namespace kopt::cli {
namespace {

using nlohmann::json;

json row_json(const memory::ProductionBaselineRecord& r) {
  return {{"task", r.task},
          {"gpu_model", r.gpu_model},
          {"name", r.name},
          {"median_us", r.median_us},
          {"noise", r.noise},
          {"samples", r.samples},
          {"device", json::parse(r.device_json, nullptr, false)},
          {"library_versions", json::parse(r.library_versions_json, nullptr, false)},
          {"spec_sha256", r.spec_sha256},
          {"shape", r.shape},
          {"detail", r.detail},
          {"created_at", r.created_at}};
}

void print_rows(const std::vector<memory::ProductionBaselineRecord>& rows) {
  std::printf("%-18s %-20s %12s %7s %7s  %-24s %s\n", "task", "baseline", "median us", "noise",
              "samples", "gpu", "measured");
  for (const auto& r : rows) {
    if (r.median_us == 0) {  // an absence row: the library did not import there
      std::printf("%-18s %-20s %12s %7s %7s  %-24s %s\n",
                  std::string(utf8_prefix(r.task, 18)).c_str(), r.name.c_str(), "not installed",
                  "-", "-", terminal_text(utf8_prefix(r.gpu_model, 24)).c_str(),
                  r.created_at.c_str());
      continue;
    }
    std::printf("%-18s %-20s %12.2f %6.2f%% %7lld  %-24s %s\n",
                std::string(utf8_prefix(r.task, 18)).c_str(), r.name.c_str(), r.median_us,
                r.noise * 100, static_cast<long long>(r.samples),
                terminal_text(utf8_prefix(r.gpu_model, 24)).c_str(), r.created_at.c_str());
  }
}

// `kopt baselines --list`: the stored rows, as a table or JSON.
int list_baselines(memory::MemoryStore& store, bool as_json) {
  auto rows = memory::all_production_baselines(store.database());
  if (!rows) {
    std::cerr << "kopt baselines: " << rows.error() << "\n";
    return 1;
  }
  if (as_json) {
    json out = json::array();
    for (const auto& r : *rows) out.push_back(row_json(r));
    std::cout << dump_json_ascii(out, 2) << "\n";
  } else if (rows->empty()) {
    std::cout << "no production baselines measured (kopt baselines TASK measures them)\n";
  } else {
    print_rows(*rows);
  }
  return 0;
}

// The tasks named on the command line (every task of the tasks folder when none is), loaded
// into `tasks`; false after printing why one cannot be found or loaded.
bool named_tasks(const cxxopts::ParseResult& args, std::vector<TaskSpec>& tasks) {
  std::filesystem::path root = args.count("tasks")
                                   ? std::filesystem::path(args["tasks"].as<std::string>())
                                   : default_tasks_root();
  std::vector<std::filesystem::path> dirs;
  if (args.count("names")) {
    for (const auto& n : args["names"].as<std::vector<std::string>>()) {
      auto d = resolve_task_dir(n, root);
      if (!d) {
        std::cerr << "kopt baselines: " << d.error() << "\n";
        return false;
      }
      dirs.push_back(*d);
    }
  } else {
    dirs = find_task_dirs(root);
  }
  for (const auto& dir : dirs) {
    auto task = load_task(dir);
    if (!task) {
      std::cerr << task.error() << "\n";
      return false;
    }
    tasks.push_back(std::move(*task));
  }
  return true;
}

}  // namespace

int run_baselines(int argc, char** argv) {
  cxxopts::Options options(
      "kopt baselines",
      "measure the production baselines of tasks (cuBLASLt in kopt's worker; PyTorch eager, "
      "torch.compile; task.json's \"production_baselines\") on this GPU and store them in the "
      "memory\n"
      "  kopt baselines [TASK...] [--no-compile] [--no-torch]\n  kopt baselines --list [--json]");
  add_database_option(options);
  options.add_options()("tasks", "the tasks folder", cxxopts::value<std::string>())(
      "names", "tasks (default: every task)", cxxopts::value<std::vector<std::string>>())(
      "list", "print the stored baselines, measure nothing")("json", "machine-readable output")(
      "no-compile", "skip torch.compile")("no-torch", "skip the PyTorch helper (cuBLASLt only)")(
      "python", "the Python with PyTorch that runs the helper",
      cxxopts::value<std::string>()->default_value("python3"))(
      "helper", "the timing helper (default: scripts/torch_baselines.py of kopt's source tree)",
      cxxopts::value<std::string>());
  add_sandbox_flags(options);
  add_positionals(options, {"names"}, "[TASK...]");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  bool list = args->count("list") > 0;
  auto store = open_memory(*args, list ? MemoryAccess::kRead : MemoryAccess::kWriteOrCreate,
                           "kopt baselines");
  if (!store) return memory_open_exit_code();
  if (list) return list_baselines(*store, args->count("json") > 0);
  std::vector<TaskSpec> tasks;
  if (!named_tasks(*args, tasks)) return 2;
  BaselineRunOptions run;
  run.python = (*args)["python"].as<std::string>();
  run.helper = args->count("helper") ? std::filesystem::path((*args)["helper"].as<std::string>())
                                     : default_torch_helper();
  run.torch_compile = !args->count("no-compile");
  run.torch = !args->count("no-torch");
  run.worker = sandbox_options_from(*args);
  auto report = measure_production_baselines(*store, tasks, run);
  if (args->count("json")) {
    json out = {{"stored", json::array()}, {"problems", report.problems}};
    for (const auto& r : report.stored) out["stored"].push_back(row_json(r));
    std::cout << dump_json_ascii(out, 2) << "\n";
  } else {
    if (!report.stored.empty()) print_rows(report.stored);
    for (const auto& p : report.problems) std::printf("not measured: %s\n", p.c_str());
    std::printf("%zu production baselines stored\n", report.stored.size());
  }
  return report.stored.empty() && !report.problems.empty() ? 1 : 0;
}

}  // namespace kopt::cli
