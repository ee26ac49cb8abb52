// `kopt run` asks each agent's model once before it records a run: a night that starts with an
// unreachable model would spend its hours on failed calls (or on the tuner alone) unnoticed.
#include <iostream>

#include "llm/preflight.h"
#include "src/cli/llm_preflight.h"

namespace kopt::cli {

int run_daemon_after_preflight(const orchestrator::DaemonInvocation& invocation,
                               const orchestrator::DaemonHooks& hooks) {
  if (invocation.tuner_only) return static_cast<int>(orchestrator::run_daemon(invocation, hooks));
  auto config = load_config_or_defaults(invocation.config);
  // A config that does not load is reported by the daemon, with every problem in it.
  if (!config || !config->llm) return static_cast<int>(orchestrator::run_daemon(invocation, hooks));
  std::vector<ProbeResult> results = preflight_llm(*config->llm);
  size_t unusable = 0;
  for (const ProbeResult& r : results) {
    std::cerr << "kopt run: preflight: " << r.line() << "\n";
    unusable += r.usable() ? 0 : 1;
  }
  if (unusable) {
    std::cerr << "kopt run: refusing to start: " << unusable << " of " << results.size()
              << " agent model" << (results.size() == 1 ? "" : "s")
              << " cannot be used (fix the config, the key or the server, or run with "
                 "--tuner-only)\n";
    return 3;
  }
  return static_cast<int>(orchestrator::run_daemon(invocation, hooks));
}

}  // namespace kopt::cli
