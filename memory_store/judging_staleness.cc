#include "memory_store/judging_staleness.h"

namespace kopt::memory {

std::string stale_judgment(const EvaluationRecord& e, const std::string& current_spec_sha256,
                           int current_verifier_version) {
  if (e.judging_spec_sha256.empty() && e.verifier_version == 0) {
    return "judged before kopt recorded the task spec and verifier of a verdict (an older "
           "database or an import), so under an unknown spec";
  }
  std::string why;
  if (!current_spec_sha256.empty() && e.judging_spec_sha256 != current_spec_sha256) {
    why = e.judging_spec_sha256.empty()
              ? "judged under an unknown task spec"
              : "judged under an older task spec (task.json or reference.cu changed since)";
  }
  if (e.verifier_version < current_verifier_version) {
    if (!why.empty()) why += ", and ";
    why += "judged by verifier version " + std::to_string(e.verifier_version) +
           " (this kopt's is " + std::to_string(current_verifier_version) + ")";
  }
  return why;
}

}  // namespace kopt::memory
