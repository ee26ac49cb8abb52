#include "src/cli/command.h"

namespace kopt::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"doctor", "check the GPU, driver, CUDA, NVRTC, CUPTI, database and LLM setup", run_doctor},
      {"tasks", "list tasks, or check that they parse, validate and compile", run_tasks},
      {"eval", "compile, verify and time one kernel file against a task", run_eval},
      {"memory", "query, share and prune the memory of slow-to-fast kernel pairs", run_memory},
      {"export", "write the best verified kernels into a repository folder", run_export},
      {"run", "the daemon: optimize the tasks' kernels until a budget runs out", run_run},
      {"status", "the daemon's run: per-task speedup, %SOL, candidates, cost", run_status},
      {"submit", "add a task to the running daemon", run_submit},
      {"report", "write the morning report (HTML with charts, or markdown)", run_report},
      {"baselines", "measure and store production baselines (PyTorch eager, torch.compile)",
       run_baselines},
      {"compare", "two runs side by side: per task best, S and verdict counts", run_compare},
  };
  return table;
}

}  // namespace kopt::cli
