// Where a stress round's tolerance holds: a round with shapes of its own was sized for them (a
// running sum's error cap for rows of 16384), so the sweep shapes and the drawn shape it also
// runs at stay within them, size by size (tasks/README.md, "Stress rounds").
#pragma once

#include "sandbox/stress_round.h"

namespace kopt {

struct TaskSpec;

// `shape` with every size at most its largest value among `round`'s own shapes (unchanged for a
// round without shapes of its own).
ShapeBinding clamp_to_round(const TaskSpec& task, const StressRound& round, ShapeBinding shape);

}  // namespace kopt
