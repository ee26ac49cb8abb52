// The evaluation seed of the GPU shapes test (shapes_test.cc), shared with the CPU test that
// checks what the suite's draws are at that seed (shape_draw_test.cc).
#pragma once

#include <cstdint>

namespace kopt::testing {
inline constexpr uint64_t kShapeTrapSeed = 20261125;
}  // namespace kopt::testing
