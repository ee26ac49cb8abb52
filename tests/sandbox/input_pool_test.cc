// The input pool's bookkeeping (sandbox/worker/input_pool.h): which sets an evaluation gets, when
// new ones are made, what is evicted and forgotten. The sets here hold no GPU memory; the GPU side
// (sets made by the reference, a candidate that damages one) is in the adversarial suite. Also
// here: the support kernels compile (NVRTC needs no GPU).
#include "sandbox/worker/input_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "sandbox/compiler.h"
#include "sandbox/worker/support_kernels.h"
#include "sandbox/worker/support_kernels_source.h"

namespace kopt::worker {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Makes sets of `bytes` and counts them.
struct Maker {
  size_t bytes = kMiB;
  double make_seconds = 0.1;  // a slow reference: worth keeping
  int made = 0;
  InputPool::Make make() {
    return [this]() -> Result<std::unique_ptr<InputSet>> {
      auto set = std::make_unique<InputSet>();
      set->bytes = bytes;
      set->payload_bytes = bytes;
      set->make_seconds = make_seconds;
      ++made;
      return set;
    };
  }
};

TEST(InputPool, FirstEvaluationsFillTheKeyThenLaterOnesOnlyDraw) {
  InputPool pool(1024 * kMiB);
  Maker maker;
  auto first = pool.draw("softmax|rows=7", 5, 8, kMiB, maker.make());
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(maker.made, 5);
  auto second = pool.draw("softmax|rows=7", 5, 8, kMiB, maker.make());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(maker.made, 8);  // 3 new, 2 of the first five
  for (int i = 0; i < 20; ++i) {
    auto later = pool.draw("softmax|rows=7", 5, 8, kMiB, maker.make());
    ASSERT_TRUE(later.ok());
    std::set<InputSet*> distinct(later->begin(), later->end());
    EXPECT_EQ(distinct.size(), 5u) << "the rounds of one shape get different sets";
  }
  EXPECT_EQ(maker.made, 8);
  EXPECT_EQ(pool.sets_made(), 8);
  EXPECT_EQ(pool.sets_reused(), 2 + 20 * 5);
  EXPECT_EQ(pool.bytes(), 8 * kMiB);
}

TEST(InputPool, DrawsAreRandomAmongTheKeptSets) {
  InputPool pool(1024 * kMiB);
  Maker maker;
  ASSERT_TRUE(pool.draw("k", 8, 8, kMiB, maker.make()).ok());
  std::set<std::set<InputSet*>> seen;
  for (int i = 0; i < 50; ++i) {
    auto drawn = pool.draw("k", 3, 8, kMiB, maker.make());
    ASSERT_TRUE(drawn.ok());
    seen.insert(std::set<InputSet*>(drawn->begin(), drawn->end()));
  }
  // 56 possible choices of 3 of 8: fifty draws that kept choosing the same few are not random.
  EXPECT_GT(seen.size(), 15u);
}

TEST(InputPool, DiscardedSetsAreNeverDrawnAgainAndAreReplaced) {
  InputPool pool(1024 * kMiB);
  Maker maker;
  auto all = pool.draw("k", 4, 4, kMiB, maker.make());
  ASSERT_TRUE(all.ok());
  InputSet* damaged = all->front();
  pool.discard(damaged);
  EXPECT_EQ(pool.bytes(), 3 * kMiB);
  auto again = pool.draw("k", 4, 4, kMiB, maker.make());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(maker.made, 5);
  EXPECT_EQ(pool.bytes(), 4 * kMiB);
}

TEST(InputPool, LeastRecentlyUsedKeysMakeRoomButNeverTheKeyInUse) {
  InputPool pool(10 * kMiB);
  Maker maker;
  ASSERT_TRUE(pool.draw("old", 3, 3, kMiB, maker.make()).ok());
  ASSERT_TRUE(pool.draw("recent", 3, 3, kMiB, maker.make()).ok());
  ASSERT_TRUE(pool.draw("old", 1, 3, kMiB, maker.make()).ok());  // "old" is now the recent one
  ASSERT_TRUE(pool.draw("new", 3, 3, kMiB, maker.make()).ok());  // 9 MiB: fits
  EXPECT_EQ(pool.bytes(), 9 * kMiB);
  maker.bytes = 2 * kMiB;
  ASSERT_TRUE(pool.draw("big", 1, 1, 2 * kMiB, maker.make()).ok());
  // 11 MiB would not fit: the least recently used key ("recent") went, not "old" or "new".
  EXPECT_EQ(pool.bytes(), 8 * kMiB);
  int before = maker.made;
  maker.bytes = kMiB;
  ASSERT_TRUE(pool.draw("old", 3, 3, kMiB, maker.make()).ok());
  ASSERT_TRUE(pool.draw("new", 3, 3, kMiB, maker.make()).ok());
  EXPECT_EQ(maker.made, before) << "old and new were kept";
  ASSERT_TRUE(pool.draw("recent", 3, 3, kMiB, maker.make()).ok());
  EXPECT_EQ(maker.made, before + 3) << "recent was evicted and is made again";
}

TEST(InputPool, SetsThatAreCheapToMakeForTheirSizeAreNotKept) {
  InputPool pool(8192 * kMiB);
  Maker cheap;
  cheap.bytes = 768 * kMiB;    // axpy at 2^26: three 256 MiB tensors
  cheap.make_seconds = 0.002;  // about 2.7 ms per GiB
  auto first = pool.draw("axpy|n=67108864", 2, 4, cheap.bytes, cheap.make());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 2u) << "the evaluation that made them still gets its sets";
  EXPECT_TRUE(pool.declined("axpy|n=67108864"));
  Maker slow;
  ASSERT_TRUE(pool.draw("softmax|rows=4096", 2, 4, kMiB, slow.make()).ok());
  EXPECT_FALSE(pool.declined("softmax|rows=4096"));
  EXPECT_EQ(pool.bytes(), 2 * kMiB) << "the declined key's sets are gone once another key draws";
}

TEST(InputPool, ShapesTooLargeToKeepAreLeftToTheCaller) {
  InputPool pool(300 * kMiB);
  EXPECT_EQ(pool.capacity_for(10 * kMiB, 64 * kMiB, 8), 8);
  EXPECT_EQ(pool.capacity_for(100 * kMiB, 64 * kMiB, 8), 4) << "large shapes keep fewer sets";
  EXPECT_TRUE(pool.can_hold(10 * kMiB, 8));    // 80 MiB of a 100 MiB third
  EXPECT_FALSE(pool.can_hold(20 * kMiB, 8));   // 160 MiB: over a third of the budget
  EXPECT_FALSE(pool.can_hold(100 * kMiB, 4));  // 400 MiB
  EXPECT_FALSE(pool.can_hold(kMiB, 0));
}

TEST(InputPool, AFailureToMakeASetIsAnErrorAndKeepsNothingHalfMade) {
  InputPool pool(100 * kMiB);
  auto failing = []() -> Result<std::unique_ptr<InputSet>> {
    return make_error("the reference failed at n=7");
  };
  auto drawn = pool.draw("k", 2, 8, kMiB, failing);
  ASSERT_FALSE(drawn.ok());
  EXPECT_NE(drawn.error().find("the reference failed"), std::string::npos);
  EXPECT_EQ(pool.bytes(), 0u);
}

TEST(InputPool, FreshSeedsDiffer) {
  InputPool pool(kMiB);
  std::set<uint64_t> seeds;
  for (int i = 0; i < 100; ++i) seeds.insert(pool.fresh_seed());
  EXPECT_EQ(seeds.size(), 100u);
}

}  // namespace
}  // namespace kopt::worker

namespace kopt::worker {
namespace {

// The worker compiles its own support kernels at start-up, on the GPU machine; a slip in them
// (they changed for issue 12: warp-level reductions) must fail here, on CI, with real NVRTC.
TEST(SupportKernelSource, CompilesWithNvrtcForHopper) {
  CompileRequest request;
  request.source = kSupportKernelSource;
  request.origin = "kopt_support.cu";
  request.arch = "sm_90";
  request.kernel_names = SupportKernels::kernel_names();  // every one the worker loads
  auto compiled = compile_kernel(request, nullptr);
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  EXPECT_TRUE(compiled->ok) << compiled->log;
  EXPECT_EQ(compiled->lowered_names.size(), request.kernel_names.size());
}

}  // namespace
}  // namespace kopt::worker
