// kopt_test_preflight_daemon: `kopt run` exactly as the CLI runs it (pre-flight of the models,
// then the daemon), with the fake evaluator in place of the GPU.
#include <csignal>

#include "src/cli/llm_preflight.h"
#include "tests/orchestrator/fake_evaluator.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int code = 0;
  auto invocation = kopt::orchestrator::parse_run_arguments(argc, argv, code, "kopt run");
  if (!invocation) return code;
  invocation->default_tasks_root = KOPT_SOURCE_DIR "/tasks";
  kopt::orchestrator::DaemonHooks hooks;
  hooks.make_evaluator =
      [](const kopt::Config&,
         const std::vector<int>&) -> kopt::Result<std::unique_ptr<kopt::Evaluator>> {
    return std::unique_ptr<kopt::Evaluator>(std::make_unique<kopt::testing::FakeEvaluator>(
        kopt::testing::fake_evaluator_options_from_env()));
  };
  return kopt::cli::run_daemon_after_preflight(*invocation, hooks);
}
