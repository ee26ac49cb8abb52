// The CLI's side of the LLM pre-flight (src/llm/preflight.h): what `kopt doctor` prints for each
// configured model, and `kopt run` refusing to start a night whose agents cannot be reached.
#pragma once

#include <functional>
#include <string>

#include "config/config.h"
#include "src/orchestrator/daemon.h"

namespace kopt::cli {

// `kopt doctor`: one finding per (provider, model), given to `emit`. Returns how many cannot be
// used.
int report_llm_probes(const LlmConfig& config,
                      const std::function<void(bool usable, const std::string& line)>& emit);

// `kopt run`: probes the agents' models (unless --tuner-only or no LLM is configured) and, when
// one cannot be used, prints one line per problem and returns exit code 3 before anything is
// recorded; otherwise runs the daemon and returns its exit code.
int run_daemon_after_preflight(const orchestrator::DaemonInvocation& invocation,
                               const orchestrator::DaemonHooks& hooks = {});

}  // namespace kopt::cli
