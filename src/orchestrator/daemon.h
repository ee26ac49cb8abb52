// `kopt run`: everything around the search loop. Reads the config and the command line, takes
// the database's lock, opens the memory, sets up logging and the live display, builds the GPU
// workers (one per GPU, optionally through a command template such as srun or ssh) and the LLM
// client (none configured: the built-in tuner alone), installs the signal handlers, runs the
// orchestrator and prints the summary. A library function, so that a test executable can run the
// same daemon with a fake evaluator.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/score_basis.h"
#include "config/config.h"
#include "sandbox/evaluator.h"

namespace kopt::orchestrator {

struct DaemonInvocation {
  std::vector<std::string> tasks;            // task folders, or folders of task folders
  std::filesystem::path default_tasks_root;  // used when `tasks` is empty
  std::optional<double> hours;
  std::optional<double> max_usd;
  std::optional<int64_t> candidates_per_task;
  std::optional<double> max_usd_per_task;
  std::optional<double> max_usd_per_hour;
  std::optional<std::vector<int>> gpus;
  std::optional<int64_t> workers_per_gpu;  // --workers-per-gpu: wins over daemon.workers_per_gpu
  std::optional<ScoreBasis> score;         // --score: what task weights and stopping read
  std::optional<std::filesystem::path> config;
  std::optional<std::filesystem::path> db;
  bool resume = false;
  bool tuner_only = false;                // ignore a configured LLM
  bool allow_unconfined_compile = false;  // run model text where the kernel has no Landlock
  bool no_display = false;
  std::string log_level = "info";
};

// `kopt run`'s exit codes, as docs/commands.md documents them.
enum class ExitCode : int {
  kOk = 0,                  // the run finished, ran out of a budget or was stopped by a signal
  kRunFailed = 1,           // every task failed, the lock is held, the run could not be recorded
  kBadInput = 2,            // config, arguments, tasks, prompts, nothing to resume from
  kNoGpu = 3,               // a named GPU is missing, or model text would run unconfined
  kUnreadableDatabase = 5,  // memory::kExitUnreadableDatabase: not a readable memory
};

// Parses `kopt run`'s arguments (argv[0] is the command's name). nullopt with exit_code set
// for --help (0) and bad arguments (2, with a message on stderr).
std::optional<DaemonInvocation> parse_run_arguments(int argc, char** argv, int& exit_code,
                                                    const std::string& program = "kopt run");

struct DaemonHooks {
  // Builds the evaluator for the run's GPUs; unset: one kopt-sandbox worker per GPU.
  std::function<Result<std::unique_ptr<Evaluator>>(const Config& config,
                                                   const std::vector<int>& gpus)>
      make_evaluator;
};

// Runs the daemon; returns the process's exit code.
ExitCode run_daemon(const DaemonInvocation& invocation, const DaemonHooks& hooks = {});

// The sandbox worker for each GPU: `kopt-sandbox --device N`, or the config's worker_command
// template with {worker} and {gpu} filled in.
Result<std::vector<SandboxOptions>> sandbox_options_for(const DaemonConfig& daemon,
                                                        const std::string& worker,
                                                        const std::vector<int>& gpus);

// The pool's members: `workers_per_gpu` copies of each GPU's worker options, each told (when more
// than one) to share its GPU in turns
// (kopt-sandbox --share-gpu, KOPT_WORKERS_PER_GPU=k to split the kept inputs) and labelled
// "GPU 1 worker 2/4"; `gpu_of_member` says which GPU (its index in `per_gpu`) each runs on.
struct PoolWorkers {
  std::vector<SandboxOptions> members;
  std::vector<int> gpu_of_member;
};
PoolWorkers pool_workers(const std::vector<SandboxOptions>& per_gpu, int64_t workers_per_gpu);

// The kopt-sandbox binary: the configured one, else the one beside the running executable,
// else "kopt-sandbox" (searched in PATH).
std::string default_worker_path(const std::string& configured);

}  // namespace kopt::orchestrator
