// kopt export --out DIR [--task T] [--gpu G] [--min-speedup X] [--tasks DIR] [--git-commit]: the
// best verified kernel of each task that beats its baseline into a folder of your repository,
// ready for CMake and PyTorch (exchange/kernel_export.h).
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "exchange/kernel_export.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/judging_spec.h"
#include "sandbox/sanitizer_runner.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/cli/sandbox_flags.h"

namespace kopt::cli {
namespace {

// Each chosen kernel runs once under compute-sanitizer (sandbox/sanitizer_runner.h) before it is
// written; a finding keeps its task out. Without a GPU or the tool, that is said once.
std::function<std::string(const std::string&, const std::string&, const std::string&)>
sanitizer_vet(const SandboxOptions& worker) {
  auto driver = load_cuda_driver();
  if (!driver) {
    std::fprintf(stderr, "kopt export: kernels are exported without compute-sanitizer: %s\n",
                 driver.error().c_str());
    return nullptr;
  }
  return [worker](const std::string& task_json, const std::string& reference,
                  const std::string& source) -> std::string {
    if (reference.empty()) {
      std::fprintf(stderr, "kopt export: not sanitized: no reference.cu for this task\n");
      return "";
    }
    EvalRequest request;
    request.task_json = task_json;
    request.reference = {reference, "reference.cu", {}};
    request.candidate = {source, "candidate.cu", {}};
    SanitizerOutcome outcome = run_sanitizers(request, worker);
    if (!outcome.note.empty()) std::fprintf(stderr, "kopt export: %s\n", outcome.note.c_str());
    return outcome.finding ? outcome.finding->describe() : "";
  };
}

// `--json`: the export's outcome as one document on stdout (the text lines are left out).
int print_export_json(const exporter::ExportReport& report, const exporter::ExportOptions& options,
                      int exit_code) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : report.kernels) {
    kernels.push_back({{"task", k.task},
                       {"status", k.changed ? "exported" : "unchanged"},
                       {"speedup", k.speedup},
                       {"sol_percent", k.sol_percent},
                       {"gpu", k.gpu_model},
                       {"sha256", k.sha256}});
  }
  nlohmann::json written = nlohmann::json::array();
  for (const auto& w : report.written) written.push_back(w.string());
  std::cout << dump_json_ascii(
                   nlohmann::json{{"out", options.out_dir.string()},
                                  {"kernels", kernels},
                                  {"skipped", report.skipped},
                                  {"refused_stale", report.refused_stale},
                                  {"written", written},
                                  {"commit", report.commit.empty() ? nlohmann::json()
                                                                   : nlohmann::json(report.commit)},
                                  {"exit_code", exit_code}},
                   2)
            << "\n";
  return exit_code;
}

// The export's options from its flags; false after printing why they are wrong.
bool export_options_from(const cxxopts::ParseResult& args, exporter::ExportOptions& options) {
  options.out_dir = args["out"].as<std::string>();
  if (args.count("task")) options.task = args["task"].as<std::string>();
  if (args.count("gpu")) options.gpu = args["gpu"].as<std::string>();
  options.git_commit = args.count("git-commit") > 0;
  options.allow_stale_judgment = args.count("allow-stale-judgment") > 0;
  options.verifier_version = kVerifierVersion;
  options.min_speedup = args["min-speedup"].as<double>();
  options.tasks_root = args.count("tasks") ? std::filesystem::path(args["tasks"].as<std::string>())
                                           : default_tasks_root();
  if (!(options.min_speedup >= 0)) {
    std::cerr << "kopt export: --min-speedup must be a number >= 0\n";
    return false;
  }
  if (!args.count("no-sanitize")) options.vet = sanitizer_vet(sandbox_options_from(args));
  return true;
}

// The outcome as lines of text; the exit code is 1 when nothing was exported or a task was
// refused.
int print_export_text(const exporter::ExportReport& report,
                      const exporter::ExportOptions& export_options) {
  for (const auto& skipped : report.skipped) std::printf("skipped %s\n", skipped.c_str());
  for (const auto& refused : report.refused_stale) {
    std::cerr << "kopt export: refused " << refused << "\n";
  }
  if (report.kernels.empty()) {
    std::cerr << "kopt export: no " << (report.refused_stale.empty() ? "" : "currently ")
              << "verified kernel to export"
              << (export_options.gpu.empty() ? "" : " on " + export_options.gpu)
              << (report.skipped.empty() ? "" : " (see the skipped tasks above)") << "\n";
    return 1;
  }
  for (const auto& k : report.kernels) {
    std::printf("%-9s %-24s %6.2fx  %5.1f%% SOL  %s  %s\n", k.changed ? "exported" : "unchanged",
                k.task.c_str(), k.speedup, k.sol_percent, k.gpu_model.c_str(),
                k.sha256.substr(0, 12).c_str());
  }
  std::printf("%zu files written to %s%s\n", report.written.size(), export_options.out_dir.c_str(),
              report.written.empty() ? " (everything was up to date)" : "");
  if (export_options.git_commit) {
    if (report.commit.empty()) {
      std::printf("nothing to commit\n");
    } else {
      std::printf("committed %s\n", report.commit.substr(0, 12).c_str());
    }
  }
  return report.refused_stale.empty() ? 0 : 1;  // a refused task is not a success
}

}  // namespace

int run_export(int argc, char** argv) {
  cxxopts::Options options(
      "kopt export",
      "write the best verified kernel of each task into DIR: TASK.cu (with its launch plan), "
      "TASK.cuh (a C++ launcher), TASK_api.h (plain C++ entry points), manifest.json "
      "(provenance), a README.md table, a CMakeLists.txt (a target kopt::TASK per task), a "
      "self-test of each kernel against its task's reference (ctest and pytest) and a PyTorch "
      "binding (kopt_torch.py); running it twice changes nothing");
  options.add_options()("out", "the folder to write into (created if missing)",
                        cxxopts::value<std::string>())("task", "only this task",
                                                       cxxopts::value<std::string>())(
      "gpu",
      "the GPU model the kernel was verified on (or a part of its name); default: per "
      "task, the GPU with the most verified evaluations",
      cxxopts::value<std::string>())("git-commit",
                                     "commit the written files in the git repository holding DIR")(
      "min-speedup",
      "export a task only when its best kernel is more than X times as fast as the baseline "
      "(0: every task, even where nothing beat the baseline)",
      cxxopts::value<double>()->default_value("1.0"), "X")(
      "tasks",
      "the folder of task folders holding each task's reference.cu, for the self-tests (default: "
      "$KOPT_TASKS, else ./tasks, else the source tree's)",
      cxxopts::value<std::string>(), "DIR")(
      "no-sanitize", "skip running each kernel under compute-sanitizer before it is exported")(
      "json", "print the outcome as one JSON document")(
      "allow-stale-judgment",
      "export a kernel even when it was judged under an older task spec (task.json or "
      "reference.cu changed since) or an older verifier; refused by default");
  add_database_option(options);
  add_sandbox_flags(options);
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  if (!given(options, *args, "out", "--out DIR")) return 2;
  exporter::ExportOptions export_options;
  if (!export_options_from(*args, export_options)) return 2;
  auto store = open_memory(*args, MemoryAccess::kRead, "kopt export");
  if (!store) return memory_open_exit_code();
  auto report = exporter::export_kernels(*store, export_options);
  if (!report) {
    std::cerr << "kopt export: " << report.error() << "\n";
    return 1;
  }
  if (args->count("json")) {
    int exit_code = report->kernels.empty() || !report->refused_stale.empty() ? 1 : 0;
    return print_export_json(*report, export_options, exit_code);
  }
  return print_export_text(*report, export_options);
}

}  // namespace kopt::cli
