// Names that become paths, file names or code (a task folder, an export's CMake target, a
// -DNAME define, a GPU name in a generated comment): one rule for each, shared by task.json,
// launch plans and `kopt memory import`, so a name one entry point refuses is refused by all.
#pragma once

#include <string_view>

namespace kopt {

// A task name: lower-case letters, digits, '_' and '-' (1 to 64 characters), so never a path.
bool is_task_name(std::string_view name);
inline constexpr std::string_view kTaskNameRule =
    "use lower-case letters, digits, '_' and '-' only (at most 64)";

// A C identifier: tensors, sizes, constants, tunables and kernels.
bool is_identifier_name(std::string_view name);

// A name the export's generated code cannot carry as a parameter or variable (kopt_torch.py,
// the C++ launcher, its CMake build): a C++ or Python keyword (lambda, class, None), a name
// C++ reserves or the generated code uses (a leading '_', 'kopt_', int64_t, size_t, SIZE_MAX).
bool is_reserved_code_name(std::string_view name);
inline constexpr std::string_view kReservedCodeNameRule =
    "is a keyword of C++ or Python, or a name the exported code uses (a leading '_', 'kopt_', "
    "int64_t, size_t and the like): the export writes tensor, size and constant names into "
    "both languages; rename it";

// A GPU model as the driver reports it ("NVIDIA H100 80GB HBM3"): 1 to 128 characters of
// letters, digits, space and . _ - ( ) / +, with no space at either end.
bool is_gpu_name(std::string_view name);
inline constexpr std::string_view kGpuNameRule =
    "a GPU name has 1 to 128 letters, digits, spaces and . _ - ( ) / + only";

// 64 lower-case hexadecimal digits.
bool is_sha256_hex(std::string_view text);

}  // namespace kopt
