// kopt eval TASK [KERNEL.cu] [--compile-only] [--json]
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/options.h"

namespace kopt::cli {

int run_eval(int argc, char** argv) {
  cxxopts::Options options("kopt eval",
                           "compile, verify and time a kernel file against a task (the task's "
                           "baseline when no file is given); exit 0 only for a verdict of ok");
  options.add_options()("task", "task name or directory", cxxopts::value<std::string>())(
      "kernel", "kernel .cu file", cxxopts::value<std::string>())(
      "tasks", "folder of task directories", cxxopts::value<std::string>())(
      "compile-only", "stop after the compile gate (no GPU needed)")(
      "arch", "target architecture (default: the GPU's, else sm_90a)",
      cxxopts::value<std::string>()->default_value(""))("json", "print the result as JSON");
  options.parse_positional({"task", "kernel"});
  options.positional_help("TASK [KERNEL.cu]");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  if (!args->count("task")) {
    std::cerr << "kopt eval: missing TASK (see --help)\n";
    return 2;
  }
  std::filesystem::path root = args->count("tasks")
                                   ? std::filesystem::path((*args)["tasks"].as<std::string>())
                                   : default_tasks_root();
  auto dir = resolve_task_dir((*args)["task"].as<std::string>(), root);
  if (!dir) {
    std::cerr << "kopt eval: " << dir.error() << "\n";
    return 2;
  }
  auto task = load_task(*dir);
  if (!task) {
    std::cerr << task.error() << "\n";
    return 2;
  }
  std::filesystem::path kernel_path =
      args->count("kernel") ? std::filesystem::path((*args)["kernel"].as<std::string>())
                            : *dir / "baseline.cu";
  auto file = load_kernel_file(kernel_path, &*task);
  if (!file) {
    std::cerr << file.error() << "\n";
    return 2;
  }
  std::string arch = (*args)["arch"].as<std::string>();
  if (arch.empty()) arch = detect_gpu_arch().value_or("sm_90a");
  CompileCache cache(cache_directory() / "compile");
  auto compiled = compile_kernel(make_compile_request(*file, {}, arch), &cache);
  if (!compiled) {
    std::cerr << "kopt eval: " << compiled.error() << "\n";
    return 1;
  }
  bool json_out = args->count("json") > 0;
  if (!compiled->ok) {
    if (json_out) {
      std::cout << nlohmann::json{{"verdict", "compile_error"}, {"log", compiled->log}}.dump(2)
                << "\n";
    } else {
      std::cout << "verdict: compile_error\n" << compiled->log << "\n";
    }
    return 1;
  }
  if (args->count("compile-only")) {
    if (json_out) {
      std::cout << nlohmann::json{{"verdict", "compiled"},
                                  {"arch", arch},
                                  {"cubin_bytes", compiled->cubin.size()},
                                  {"compile_ms", compiled->millis},
                                  {"cache_hit", compiled->cache_hit},
                                  {"log", compiled->log}}
                       .dump(2)
                << "\n";
    } else {
      std::printf("compiled %s for %s: %zu bytes of CUBIN, %.1f ms%s\n", kernel_path.c_str(),
                  arch.c_str(), compiled->cubin.size(), compiled->millis,
                  compiled->cache_hit ? " (cache hit)" : "");
    }
    return 0;
  }
  std::cerr << "kopt eval: GPU evaluation is not built yet; use --compile-only\n";
  return 3;
}

}  // namespace kopt::cli
