// The self-test of an export: TASK_selftest.cc re-checks the exported kernel against the task's
// reference (exported beside it, compiled the same way) on random inputs at the two smallest
// shapes of the task's sweep, so that a team can keep verifying the kernel in its own CI after a
// driver or toolkit upgrade, in seconds. It is a smoke check of the exported artifact (the
// device code loads and launches on this GPU and driver, the plan's launch geometry and
// arguments are right, the results match the oracle within the task's tolerance), not a second
// verification: kopt's sandbox verified the same bytes on every sweep and holdout shape over
// many rounds. Built and registered with ctest by the export's CMakeLists.txt; pytest runs it
// too (test_kopt_kernels.py).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

// TASK_selftest.cc: calls kopt_TASK_reference_launch and kopt_TASK_launch (TASK_api.h) per
// shape and compares every output. An error when a shape or an init bound does not evaluate.
Result<std::string> generate_selftest_source(const TaskSpec& task);

// The sweep shapes the self-tests check: the two with the fewest input elements (ties: sweep
// order), so the smallest and an odd edge size where the sweep has them.
std::vector<ShapeBinding> selftest_shapes(const TaskSpec& task);

// `value` exactly, always with a '.' or an exponent ("2.0", "9.9999999999999995e-07").
std::string float_literal(double value);

// kopt_selftest.h, the same for every task.
const char* selftest_support_header();

}  // namespace kopt::exporter
