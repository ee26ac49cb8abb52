// kopt run [--tasks DIR...] [--hours H] [--max-usd X] [--gpus 0,1] [--config FILE] [--db PATH]
//          [--resume] [--tuner-only]: the optimization daemon (src/orchestrator/daemon.h), after
//          a pre-flight of the configured models (llm_preflight.h).
#include "src/cli/command.h"
#include "src/cli/llm_preflight.h"
#include "src/cli/options.h"
#include "src/orchestrator/daemon.h"

namespace kopt::cli {

int run_run(int argc, char** argv) {
  int code = 0;
  auto invocation = orchestrator::parse_run_arguments(argc, argv, code);
  if (!invocation) return code;
  invocation->default_tasks_root = default_tasks_root();
  return run_daemon_after_preflight(*invocation);
}

}  // namespace kopt::cli
