// `kopt doctor --config`: each configured model asked once, so that a wrong key, a misspelled
// model or a server that is not up shows before the night, not at its first call.
#include <cstdio>

#include "src/cli/llm_preflight.h"
#include "src/llm/preflight.h"

namespace kopt::cli {

int report_llm_probes(const LlmConfig& config) {
  int unusable = 0;
  for (const ProbeResult& r : preflight_llm(config)) {
    std::printf("  %-8s %-22s %s\n", r.usable() ? "ok" : "MISSING", "LLM model", r.line().c_str());
    unusable += r.usable() ? 0 : 1;
  }
  return unusable;
}

}  // namespace kopt::cli
