// What an evaluation concluded about a candidate kernel. The sandbox reaches it, the memory
// stores it (by name) and the report prints it: one enum, parsed once where text comes in.
#pragma once

#include <optional>
#include <string>

namespace kopt {

enum class Verdict {
  kOk,
  kCompileError,
  kInvalidPlan,       // the launch plan cannot run (bad grid, too much shared memory, block > 1024)
  kLaunchError,       // the driver refused the launch
  kIncorrect,         // an output is out of tolerance (or NaN/Inf, or all zero)
  kNondeterministic,  // two runs on the same inputs disagree
  kOutOfBounds,       // a write landed in a guard zone around a buffer
  kModifiedInput,     // an input changed during the run
  kTimeout,           // the worker missed its deadline and was killed
  kCrash,             // the worker died (sticky CUDA error, signal)
  kSuspicious,        // faster than physics allows, or a speedup too large, and not confirmed
  kGpuBusy,           // the GPU was shared or throttled while timing: no number, judge it again
  kSanitizer,         // compute-sanitizer found a memory error, race, barrier misuse or
                      // uninitialized read (checked on each new best and before an export)
  kSanitizing,        // stored by the daemon for a provisional best while its sanitizer pass
                      // runs; never a worker's answer, never imported
  kScreened,  // EvalOptions::full_gate_below_us: verified at the task's declared shapes, timed,
              // and not faster than the task's best beyond the noise, so the rest of the gate did
              // not run; its times are honest, it is never a win and never exported
};

std::string verdict_name(Verdict verdict);
std::optional<Verdict> parse_verdict(const std::string& name);

}  // namespace kopt
