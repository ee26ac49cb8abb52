// Drawn shapes for a task whose task.json declares none: ranges derived from the shapes it lists
// (the default, the sweep, the holdouts, the stress rounds' shapes), so that no task is judged at
// its listed sizes alone. A size listed with one value only (a head dimension of 128) stays
// fixed; every other size is drawn from its smallest listed value to twice its largest, in
// multiples of the greatest common divisor of its listed values (a tile or a quantisation group
// the kernels rely on); sizes equal in every listed shape stay equal, and a size that divides
// another, or stays at most another, in every listed shape does so in the draws too. The format
// is documented in tasks/README.md ("Drawn shapes").
#pragma once

#include "sandbox/shape_draw.h"

namespace kopt {

// The derived draws of `task` (its sizes, shapes, holdout and stress rounds already read);
// `count` 0 when no size varies or no shape within the budget satisfies what was derived.
DrawSpec derive_draw_spec(const TaskSpec& task);

}  // namespace kopt
