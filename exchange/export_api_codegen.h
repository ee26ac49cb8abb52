// The plain C++ face of an exported kernel: TASK_api.h declares one function per kernel file of
// the task (`kopt_TASK_launch`, and `kopt_TASK_reference_launch` when its reference is exported)
// that any C++ file can call; TASK_api.cc and TASK_reference_api.cc define them by including the
// launcher headers (plain C++ over the device code kopt compiled), one kernel file per file. The
// CMake library targets, the self-test and the PyTorch binding all call these.
#pragma once

#include <string>

#include "sandbox/task_spec.h"

namespace kopt::exporter {

// "kopt_axpy" / "kopt_axpy_reference": the prefix of the functions of one kernel file.
std::string api_prefix(const TaskSpec& task, bool reference);

// TASK_api.h: the launch and workspace_bytes functions of the kernel (and of the reference).
std::string generate_api_header(const TaskSpec& task, bool with_reference);

// TASK_api.cc or TASK_reference_api.cc: the functions, forwarding to the launcher of `cuh_file`
// in namespace `launcher_namespace`.
std::string generate_api_source(const TaskSpec& task, bool reference, const std::string& cuh_file,
                                const std::string& launcher_namespace);

}  // namespace kopt::exporter
