// compute-sanitizer on a candidate: the kernel runs once more, in a worker process of its own
// started under each of the tools (memcheck, racecheck, synccheck, initcheck), at every shape
// class verification knows (the timed shape, the holdouts, the sweep, then the stress and drawn
// rounds) with one round and no timing, bounded by a time budget per tool rather than by shape
// size: bugs live at the large shapes (a write past a short guard only there, a race that needs
// several tiles per block), where a byte limit never let the tools look. Verification's scratch
// fill is initialised memory to initcheck; the run-to-run change of that fill (memory_patterns.h)
// is what catches a kernel that relies on it. The worker runs without CUPTI
// (--under-profiler): the sanitizer and CUPTI cannot both subscribe to the driver's callbacks.
// A finding in one of the candidate's kernels is a `sanitizer` verdict. memcheck, racecheck and
// synccheck check only the candidate's kernels (kopt's support kernels and the task's reference
// run unchecked); initcheck checks them all and ignores what they trigger.
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

// KOPT_SANITIZER_KERNELS: "all" checks every kernel under every tool; unset or "candidate": the
// candidate's alone where the tool allows it; "candidate-initcheck" filters initcheck too (an
// experiment for bench/sanitizer_cost.py: its false findings on correct baselines are the point).
bool sanitizer_kernels_default();
bool sanitizer_filters_initcheck();
// What is wrong with a KOPT_SANITIZER_KERNELS value (one line, said once as a warning), or nothing
// for "", "all", "candidate" and "candidate-initcheck".
std::optional<std::string> sanitizer_kernels_problem(const std::string& value);

struct SanitizerOptions {
  std::string sanitizer;  // compute-sanitizer's path; empty: find_compute_sanitizer()
  std::vector<std::string> tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  // The longest one tool may take, its worker's start included; past it the tool is given up
  // (said in the note) and the next one runs.
  double seconds_per_tool = 120;
  // Verification under one tool starts no new shape after this many seconds (the shape running
  // then finishes, within seconds_per_tool); the shapes left out are said in the note.
  double verify_seconds_per_tool = 30;
  // 0: every shape class, under the time budget. Otherwise the old reduction: only the sweep
  // shapes whose inputs and outputs hold at most this many bytes (at least the first).
  int64_t small_shape_bytes = 0;
  // Where each tool's full report is kept (TOOL-kopt-sanitizer-XXXXXX.txt), to read past the
  // first finding; empty: reports are removed.
  std::string report_dir;
  // memcheck, racecheck and synccheck check only the candidate's kernels (candidate_kernel_filter);
  // false, or KOPT_SANITIZER_KERNELS=all: every kernel of the worker, as before (issue 35's A/B).
  bool candidate_kernels_only = sanitizer_kernels_default();
  bool filter_initcheck = sanitizer_filters_initcheck();  // the experiment above; never by default
  // Whether the tools run the task's round past 2^31 elements too (the last step of the plan,
  // reached when the budget allows). The daemon's lane sets false when it shares its GPU with a
  // timer: that round holds the GPU's wide-round turn for its whole run under the tool, and the
  // timer's own gate waited for it at every would-be best of a task with such a round (8-13 s
  // for a transpose kernel while decode_attention's round ran under memcheck and initcheck;
  // sanitizer_lane.h: lane_sanitizer_options).
  bool wide_round = true;
};

// Hang detection under a tool: a run may take this many times the trusted kernel's time (and at
// least the verification budget), not the 20x of a plain run (sanitizer_runner.cc says why).
inline constexpr double kSanitizerHangFactor = 2000;

// The longest one run of the candidate may take under a tool (EvalOptions::hang_ceiling_seconds):
// the verification budget starts no shape after it, so a run that starts by then times out within
// the tool's wall limit (10 s kept for the worker's start and answer), and the worker says what
// finished (shapes_verified); a run the supervisor cut off at the wall would not.
double hang_ceiling_under_a_tool(const SanitizerOptions& options);

// compute-sanitizer from PATH, else $CUDA_HOME/bin or /usr/local/cuda/bin; nullopt if none.
std::optional<std::string> find_compute_sanitizer();

// `request` reduced for the sanitizer: one round, verification only (no timing, kept inputs,
// quiet-GPU check or profile). With `small_shape_bytes` 0: every shape class, the timed shape and
// the holdouts first, then the sweep, stress and drawn rounds, under `verify_budget_seconds`;
// otherwise the task's sweep shapes up to that size alone (no holdout or stress).
Result<EvalRequest> sanitizer_request(const EvalRequest& request, int64_t small_shape_bytes,
                                      double verify_budget_seconds = 0);
// The request every tool of a pass under `options` starts from: the reduction above, the tool's
// wall and hang limits, and the round past 2^31 elements only where `options.wide_round`.
Result<EvalRequest> sanitizer_request(const EvalRequest& request, const SanitizerOptions& options);
// Whether a pass under `options` leaves out a round past 2^31 elements that `request` would run
// (its task declares one, its options ask for it): what the pass's note then says.
bool leaves_out_wide_round(const EvalRequest& request, const SanitizerOptions& options);

// The reduced request as `tool` runs it: racecheck and synccheck take the shape classes smallest
// first, memcheck and initcheck as given (the timed shape and the holdouts first).
EvalRequest request_for_tool(const EvalRequest& reduced, const std::string& tool);
// Whether `tool` takes the shape classes smallest first (racecheck, synccheck), and the reduced
// request so ordered (memcheck and initcheck run it once more so when they finished no shape).
bool takes_smallest_shapes_first(const std::string& tool);
EvalRequest smallest_shapes_first(const EvalRequest& reduced);

// A finding when the run under `tool` computed wrong outputs (incorrect, nondeterministic, out of
// bounds); nothing for a timeout, a crash or any other verdict (unchecked_under_tool's).
std::optional<SanitizerFinding> wrong_outputs_under_tool(const std::string& tool,
                                                         const EvalResult& result);

// compute-sanitizer's options that check only `kernels` (a plan's launches): one
// "--kernel-name kns=IDENT" per kernel, IDENT its identifier ("ns::tile<64>" -> "tile"), which
// every instance's mangled symbol contains; a kopt kernel whose symbol contains it too is checked
// as well (slower, never less safe). Empty (every kernel checked) when a name is not an identifier.
std::vector<std::string> candidate_kernel_filter(const std::vector<std::string>& kernels);

// A finding when the run under `tool` ended in a timeout or a crash before any shape finished
// (EvalResult::shapes_verified 0): the tool checked nothing, and a kernel that stalls or traps
// only when it runs slowly (under a tool) must not pass for that. Nothing after a shape or more.
// run_sanitizers counts it only once the smallest shape came first (memcheck and initcheck, which
// start at the timed shape, run again so).
std::optional<SanitizerFinding> unchecked_under_tool(const std::string& tool,
                                                     const EvalResult& result);

// Runs the tools one after another on the GPU of `worker` (its kopt-sandbox path and device) and
// stops at the first finding. Workers started through a launcher (srun, ssh) are not sanitized:
// the tool's report would be written on another machine.
SanitizerOutcome run_sanitizers(const EvalRequest& request, const SandboxOptions& worker,
                                const SanitizerOptions& options = {});

// The verdict of a finding: `sanitizer`, with the finding as its detail.
EvalResult sanitizer_verdict(const SanitizerFinding& finding);

}  // namespace kopt
