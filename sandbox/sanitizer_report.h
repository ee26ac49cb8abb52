// Reading compute-sanitizer's report. Each tool (memcheck, racecheck, synccheck, initcheck) writes
// "========= "-prefixed lines: a line naming the kind of error ("Invalid __global__ write of size
// 4 bytes", "Error: Race reported between Write access ..."), then indented lines that say where
// ("at axpy+0x90 in /tmp/candidate.cu:14"). Only the first finding in one of the candidate's own
// kernels becomes a verdict; one in kopt's support kernels or the task's reference is the harness's
// business, not the candidate's.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopt {

struct SanitizerFinding {
  std::string tool;      // "memcheck"
  std::string kind;      // "Invalid __global__ write of size 4 bytes"
  std::string kernel;    // "axpy" (empty when the report does not say)
  std::string location;  // "candidate.cu:14" (empty without line information)
  std::string describe()
      const;  // "memcheck: Invalid __global__ write ... in axpy at candidate.cu:14"
};

struct SanitizerOutcome {
  bool ran = false;                         // false: nothing ran (no compute-sanitizer here)
  std::optional<SanitizerFinding> finding;  // the first finding in a candidate's kernel
  std::string note;  // what ran and for how long ("memcheck 3.1 s, racecheck 9.8 s"), or why not
  double seconds = 0;
};

// The first finding of `tool`'s report `text` in a kernel named in `kernels` (a name matches the
// kernel itself, a template instance or an overload of it). A finding whose kernel the report does
// not name counts too: it cannot be pinned on kopt's own kernels. Empty `kernels`: any kernel.
std::optional<SanitizerFinding> first_sanitizer_finding(const std::string& tool,
                                                        const std::string& text,
                                                        const std::vector<std::string>& kernels);

// The "ERROR SUMMARY: N errors" count of a report, or nullopt when it has none (the tool did not
// finish).
std::optional<long> sanitizer_error_count(const std::string& text);

}  // namespace kopt
