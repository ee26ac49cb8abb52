// The adversarial kernels in tests/sandbox/adversarial/: one file per defence of the sandbox,
// each a complete kopt kernel file whose header comment says what the sandbox must conclude:
//
//   // expect: out_of_bounds            (alternatives: "incorrect|nondeterministic")
//   // task: axpy                       (optional; default axpy)
//   // rounds: 2                        (optional; verification rounds to ask for)
//   // log: device heap                 (compile_error only: text the compile log must hold)
//   // max-speedup: 1.25                (ok only: the most the timed speedup may be; a kernel
//   //                                   whose cheat the sandbox neutralizes runs at honest speed)
//
// The numerical kernels in tests/sandbox/numerical/ (planted numerical bugs, issue 15) add:
//
//   // stress: std 40                   (the stress round whose failure the verdict must name)
//   // without-stress: ok               (the verdict with stress rounds off: the bug's cover)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/protocol.h"

namespace kopt::testing {

struct AdversarialKernel {
  std::string name;  // file stem, also the test's name
  std::filesystem::path path;
  std::string source;
  std::string task = "axpy";
  std::vector<Verdict> expected;  // any of these is right
  std::optional<int> rounds;
  std::string log;                      // what a compile_error's log must hold
  std::optional<double> max_speedup;    // the most an accepted kernel's speedup may be
  std::string stress;                   // the stress round that must catch it
  std::vector<Verdict> without_stress;  // its verdict when stress rounds are off
};

// Parses the header of one file.
Result<AdversarialKernel> read_adversarial_kernel(const std::filesystem::path& path);

// Every *.cu file in `dir`, sorted by name; a malformed header is an error.
Result<std::vector<AdversarialKernel>> kernels_in(const std::filesystem::path& dir);

// Names only, for parameterized tests (empty when the folder cannot be read).
std::vector<std::string> kernel_names_in(const std::filesystem::path& dir);

// The adversarial folder's kernels (KOPT_ADVERSARIAL_DIR) and their names.
Result<std::vector<AdversarialKernel>> adversarial_kernels();
std::vector<std::string> adversarial_kernel_names();

// A task used by the suite: tasks/NAME in the source tree, else tests/sandbox/tasks/NAME.
std::filesystem::path adversarial_task_dir(const std::string& task);

// One file of a task used by the suite (reference.cu, baseline.cu), as a request's source.
KernelSource adversarial_task_file(const std::string& task, const std::string& name);

// Why this machine cannot run the GPU tests ("no CUDA device", the driver's error), or "".
std::string missing_gpu();

// "incorrect|nondeterministic".
std::string describe_verdicts(const std::vector<Verdict>& verdicts);

}  // namespace kopt::testing
