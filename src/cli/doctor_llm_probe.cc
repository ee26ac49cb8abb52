// `kopt doctor --config`: each configured model asked once, so that a wrong key, a misspelled
// model or a server that is not up shows before the night, not at its first call.
#include <cstdio>

#include "llm/preflight.h"
#include "src/cli/llm_preflight.h"

namespace kopt::cli {

int report_llm_probes(const LlmConfig& config,
                      const std::function<void(bool usable, const std::string& line)>& emit) {
  int unusable = 0;
  for (const ProbeResult& r : preflight_llm(config)) {
    emit(r.usable(), r.line());
    unusable += r.usable() ? 0 : 1;
  }
  return unusable;
}

}  // namespace kopt::cli
