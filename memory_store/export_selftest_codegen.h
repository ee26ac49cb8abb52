// The self-test of an export: TASK_selftest.cu re-checks the exported kernel against the task's
// reference (exported beside it) on random inputs at every shape of the task's sweep, so that a
// team can keep verifying the kernel in its own CI after a driver or toolkit upgrade. Built and
// registered with ctest by the export's CMakeLists.txt; pytest runs it too (test_kopt_kernels.py).
#pragma once

#include <string>

#include "common/result.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

// TASK_selftest.cu: calls kopt_TASK_reference_launch and kopt_TASK_launch (TASK_api.h) per
// shape and compares every output. An error when a shape or an init bound does not evaluate.
Result<std::string> generate_selftest_source(const TaskSpec& task);

// `value` exactly, always with a '.' or an exponent ("2.0", "9.9999999999999995e-07").
std::string float_literal(double value);

// kopt_selftest.h, the same for every task.
const char* selftest_support_header();

}  // namespace kopt::exporter
