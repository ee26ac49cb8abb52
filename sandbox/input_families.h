// Input families: structured inputs applied to every task by each input's role, not written per
// task. Stress rounds (task.json) spring the traps a task's author thought of; these spring the
// ones nobody writes down: a few huge activations in one channel, a row of zeros, a row so small
// that eps decides the result, constant rows, sorted and reversed rows, values past fp16's range
// (fp16 arithmetic in an fp32 task overflows), a few outlier rows among normal ones (a kernel that
// probes a row's first 32 values and then skips the max subtraction overflows), one spike in every
// row (at the row's ends and the edges of powers of two first: a reduction that skips a position
// loses the row's whole scale), the same index
// everywhere (atomics and gathers that assume distinct indices). Float inputs of one shape also
// get zero and tiny rows together, the same rows in each (a residual and its addend: eps decides
// only where their sum is small). Each family is a stress round of
// its own, generated at load, run at a small shape and (a rotating few) at the timed shape and a
// holdout. The format of opting out is documented in tasks/README.md ("Input families").
#pragma once

#include <string>
#include <vector>

#include "sandbox/stress_round.h"

namespace kopt {

struct TaskSpec;

// Every family's name, in the order rounds are generated ("outlier_channels", ...).
const std::vector<std::string>& input_family_names();

struct FamilyRound {
  std::string family;  // one of input_family_names()
  std::string input;   // the input it changes ("x+residual": the inputs a joint round changes)
  StressRound round;   // named "family <family> in <input>"
  // Values grow by a factor F over the input's own scale (outliers, values near the dtype's
  // limits), and outputs up to F^2 (a product of two activations, a square): the tolerance's
  // absolute parts (atol, max_error) are scaled by F^2, since a correct kernel's rounding grows
  // with its outputs (NaN, Inf and rtol still judge). 1 for families that keep the scale.
  double tolerance_scale = 1;
  // Constant rows make every product of a row's reduction the same sign: a sum over the row
  // grows with its length n where random signs grow with sqrt(n), so outputs and a correct
  // kernel's rounding grow by up to sqrt(n). This is the row's length (an expression over the
  // sizes); the plan scales the tolerance's absolute parts by its square root at each shape.
  std::string coherent_row;
};

// The family rounds of `task` by its inputs' roles (float tensors, integer indices), minus
// those task.json's `input_families.skip` names.
std::vector<FamilyRound> input_family_rounds(const TaskSpec& task);

// The magnitude values near `dtype`'s limits take: past fp16's range for fp32 and bf16 (so that
// fp16 arithmetic overflows), half fp16's largest value for fp16, e4m3's largest.
double family_limit_value(DType dtype);

}  // namespace kopt
