// kopt_test_daemon: `kopt run` with the GPU replaced by the fake evaluator, for the tests that
// need a real process: signals, kill -9 and --resume, the lock, `kopt status` and `kopt submit`
// from another process. Same arguments as `kopt run`; KOPT_FAKE_DELAY_MS slows each evaluation.
#include <csignal>

#include "src/orchestrator/daemon.h"
#include "tests/orchestrator/fake_evaluator.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int code = 0;
  auto invocation = kopt::orchestrator::parse_run_arguments(argc, argv, code, "kopt_test_daemon");
  if (!invocation) return code;
  invocation->default_tasks_root = KOPT_SOURCE_DIR "/tasks";
  kopt::orchestrator::DaemonHooks hooks;
  hooks.make_evaluator = [](const kopt::Config&, const std::vector<int>&)
      -> kopt::Result<std::unique_ptr<kopt::Evaluator>> {
    return std::unique_ptr<kopt::Evaluator>(
        std::make_unique<kopt::testing::FakeEvaluator>(kopt::testing::fake_evaluator_options_from_env()));
  };
  return static_cast<int>(kopt::orchestrator::run_daemon(*invocation, hooks));
}
