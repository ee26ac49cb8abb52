// What a verdict was reached under, so that a kernel judged under an older task spec or an older
// verifier is never passed off as verified under the current ones (`kopt memory wins`, the report
// and `kopt export` say so; the export refuses such a kernel unless asked).
#pragma once

#include <string>

#include "sandbox/task_spec.h"

namespace kopt {

// The verifier's version: raise it whenever a change to the worker's checks could turn an
// accepted kernel into a refused one (a new defence, a stricter tolerance, new inputs), so
// the kernels judged before it are re-judged before they are exported.
// 1: the gate until 2026-11-24. 2: every timed sample poisoned and checked, candidates on copies
// of kept input sets, the reference's kept outputs masked, integrity checksums keyed with a
// per-worker secret, parameters checked against the plan, drawn shapes and mirrored stress rounds,
// compute-sanitizer on each new best. 3: shapes at the kernel's own thresholds, drawn shapes for
// every task, input families by role, constants drawn from their ranges, the round past 2^31
// elements (issue 32). 4: exact allocations under compute-sanitizer, the task's stress rounds at
// each crossing a literal names, the last-element spike, co-run rounds for kernels that
// communicate between blocks (issue 32, 2026-11-28; off by default since: they killed no mutant,
// and fewer rounds than a kernel was judged with asks for no new judgement).
inline constexpr int kVerifierVersion = 4;

// sha256 over the task's canonical task.json (parsed and re-serialized: key order and white space
// do not count) and its reference.cu's bytes: everything a verdict depends on besides the kernel
// and the verifier. A missing reference.cu hashes as empty text (the task cannot be judged then).
std::string judging_spec_sha256(const TaskSpec& task);

}  // namespace kopt
