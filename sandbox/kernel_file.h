// A kernel file is one complete candidate: CUDA source plus a launch plan in a comment block
//
//   /* kopt:plan
//   { "tunables": {"BLOCK": [256, 128, 512]},
//     "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
//                   "args": ["x", "y", "out", "n", "alpha"]}] }
//   */
//
// so it can be evaluated, stored and exported on its own. Format: tasks/README.md.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/dtype.h"
#include "sandbox/task_spec.h"

namespace kopt {

// How one kernel argument is bound.
struct ArgBinding {
  enum class Kind { kBuffer, kInt32, kInt64, kFloat32, kFloat64 } kind = Kind::kBuffer;
  std::string buffer;      // for kBuffer: an input, output or scratch name
  std::string expression;  // integer expression, or the constant's name for floats
  std::string text;        // as written in the plan
};

struct Launch {
  std::string kernel;
  std::vector<std::string> grid;   // 1-3 expressions
  std::vector<std::string> block;  // 1-3 expressions
  std::string shared_bytes = "0";  // dynamic shared memory, an expression
  std::vector<ArgBinding> args;
  int plan_line = 0;               // line in the .cu file, for messages
};

struct ScratchBuffer {
  std::string name;
  DType dtype = DType::kF32;
  std::string count;  // element count expression
  bool zero = false;  // zero-filled before each run; otherwise filled with garbage (NaN bytes)
};

struct Tunable {
  std::string name;
  std::vector<int64_t> values;  // values[0] is the default
};

struct KernelFile {
  std::string source;  // the whole .cu text
  std::string origin;  // file name for messages
  std::vector<Tunable> tunables;
  std::vector<ScratchBuffer> scratch;
  std::vector<Launch> launches;
  std::vector<std::string> compile_options;  // from a short allow-list
  int plan_line = 0;                         // first line of the plan block

  // Tunable values to use: defaults overridden by `chosen`.
  std::map<std::string, int64_t> tunable_values(const std::map<std::string, int64_t>& chosen) const;
};

// Kernel files are model output: a larger one is refused before any parsing. Every kernel of
// the suite is under 3 KB; the largest kernels models write are tens of KB.
inline constexpr size_t kMaxKernelSourceBytes = 256 * 1024;

// Parses the plan and checks it against the source (every launched kernel is defined) and,
// when `task` is given, against the task (every name and symbol resolves).
Result<KernelFile> parse_kernel_file(const std::string& source, const std::string& origin,
                                     const TaskSpec* task);
Result<KernelFile> load_kernel_file(const std::filesystem::path& path, const TaskSpec* task);

// Compile options a plan may ask for; anything else is refused (no -I to host paths etc.).
bool is_allowed_compile_option(const std::string& option);

}  // namespace kopt
