// compute-sanitizer on a candidate: the kernel runs once more, in a worker process of its own
// started under each of the tools (memcheck, racecheck, synccheck, initcheck), at the task's small
// sweep shapes with one round, no timing and no stress or holdout rounds, so that even racecheck
// (tens of seconds at full sizes) stays within its bounded time. The worker runs without CUPTI
// (--under-profiler): the sanitizer and CUPTI cannot both subscribe to the driver's callbacks.
// A finding in one of the candidate's kernels is a `sanitizer` verdict; kopt's support kernels and
// the task's reference run under the tools too, and what they trigger is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/evaluator.h"
#include "sandbox/protocol.h"
#include "sandbox/sanitizer_report.h"

namespace kopt {

struct SanitizerOptions {
  std::string sanitizer;  // compute-sanitizer's path; empty: find_compute_sanitizer()
  std::vector<std::string> tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  // The longest one tool may take, its worker's start included; past it the tool is given up
  // (said in the note) and the next one runs.
  double seconds_per_tool = 120;
  // Sweep shapes whose inputs and outputs hold at most this many bytes are run (at least the
  // first shape always is).
  int64_t small_shape_bytes = int64_t(64) << 20;
  // Where each tool's full report is kept (TOOL-kopt-sanitizer-XXXXXX.txt), to read past the
  // first finding; empty: reports are removed.
  std::string report_dir;
};

// compute-sanitizer from PATH, else $CUDA_HOME/bin or /usr/local/cuda/bin; nullopt if none.
std::optional<std::string> find_compute_sanitizer();

// `request` reduced for the sanitizer: the task's small sweep shapes, one round, verification
// only (no timing, holdout, stress, kept inputs, quiet-GPU check or profile).
Result<EvalRequest> sanitizer_request(const EvalRequest& request, int64_t small_shape_bytes);

// Runs the tools one after another on the GPU of `worker` (its kopt-sandbox path and device) and
// stops at the first finding. Workers started through a launcher (srun, ssh) are not sanitized:
// the tool's report would be written on another machine.
SanitizerOutcome run_sanitizers(const EvalRequest& request, const SandboxOptions& worker,
                                const SanitizerOptions& options = {});

// The verdict of a finding: `sanitizer`, with the finding as its detail.
EvalResult sanitizer_verdict(const SanitizerFinding& finding);

}  // namespace kopt
