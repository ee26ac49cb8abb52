// Whether a stored verdict still holds: an evaluation records the task spec and the verifier
// version it was judged under (schema version 4), and a kernel judged under an older one is not
// verified under the current rules. `kopt memory wins`, the report and `kopt export` say so, and
// the export refuses such a kernel unless asked (exchange/kernel_export.h).
#pragma once

#include <string>

#include "memory_store/records.h"

namespace kopt::memory {

// "" when `e` was judged under `current_spec_sha256` (skipped when empty: the current spec is
// unknown) by a verifier at least `current_verifier_version`; else why its verdict may not hold,
// as one phrase ("judged under an older task spec (task.json or reference.cu changed since)").
std::string stale_judgment(const EvaluationRecord& e, const std::string& current_spec_sha256,
                           int current_verifier_version);

// What to do about it, for messages.
inline constexpr const char* kRejudgeAdvice =
    "re-judge it under the current spec and verifier: `kopt run --tasks DIR` on the task, or "
    "check its source with `kopt eval TASK FILE`";

}  // namespace kopt::memory
