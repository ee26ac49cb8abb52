// The keyword classifier of techniques (techniques.h): each label from a lesson, from the
// identifiers a change added, and words that must not trigger one.
#include "memory_store/techniques.h"

#include <gtest/gtest.h>

namespace kopt::memory {
namespace {

using Labels = std::vector<std::string>;

TEST(Techniques, NamedFromALesson) {
  EXPECT_EQ(techniques_in("float4 loads and a warp shuffle reduction"),
            (Labels{"vector_loads", "warp_shuffle"}));
  EXPECT_EQ(techniques_in("An online softmax keeps a running max and sum"),
            (Labels{"online_softmax"}));
  EXPECT_EQ(techniques_in("Tiles in shared memory, padded by one to avoid bank conflicts"),
            (Labels{"shared_tiling", "smem_padding"}));
  EXPECT_EQ(techniques_in("cp.async double buffering"), (Labels{"cp_async"}));
  EXPECT_EQ(techniques_in("wmma tensor-core tiles"), (Labels{"shared_tiling", "tensor_cores"}));
  EXPECT_EQ(techniques_in("split-K over 4 blocks, fused bias and ReLU"),
            (Labels{"split_k", "fusion"}));
  EXPECT_EQ(techniques_in("the row is held in registers"), (Labels{"register_resident"}));
}

TEST(Techniques, NamedFromSourceIdentifiers) {
  EXPECT_EQ(techniques_in("v = __shfl_xor_sync(0xffffffff, v, 16);"), (Labels{"warp_shuffle"}));
  EXPECT_EQ(techniques_in("__half2 h = __hadd2(a, b);"), (Labels{"packed_half"}));
  EXPECT_EQ(techniques_in("#pragma unroll\nfor (...)"), (Labels{"unrolling"}));
}

TEST(Techniques, WordsThatMustNotTrigger) {
  // "comma" holds "mma", "float" is not float4, "online" needs the word.
  EXPECT_TRUE(techniques_in("a comma, a float, an int").empty());
  EXPECT_TRUE(techniques_in("").empty());
}

TEST(Techniques, APairTeachesWhatItsFastKernelAdded) {
  // The slow kernel already shuffled; the fast one added float4: only that is taught.
  EXPECT_EQ(pair_techniques("", "shfl xor sync x", "shfl xor sync float4 x"),
            (Labels{"vector_loads"}));
  // The lesson counts too.
  EXPECT_EQ(pair_techniques("fused the scale", "a", "a"), (Labels{"fusion"}));
}

}  // namespace
}  // namespace kopt::memory
