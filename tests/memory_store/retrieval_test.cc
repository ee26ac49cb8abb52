// Retrieval on a hand-built memory where the right answer is known: relevance, boosts, lineage
// diversity, negatives as warnings, usefulness, and determinism.
#include "memory_store/retrieval.h"

#include <gtest/gtest.h>

#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

const char* kSharedTreeKernel = R"(
extern "C" __global__ void rmsnorm_rows(const float* x, float* out, int rows, int cols) {
  extern __shared__ float partial[];
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) sum += x[c] * x[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) { partial[threadIdx.x] += partial[threadIdx.x + stride]; __syncthreads(); }
  float scale = rsqrtf(partial[0] / cols);
})";

// The memory: a normalization pair that fits the query, distractors from other families, a
// second step of the fitting lineage, an older-architecture twin and a warning.
class RetrievalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(open_store(dir_ / "m.db"));
    MemoryStore& s = *store_;
    add_task(s, "layernorm", {"normalization", "memory-bound", "fp32"});
    add_task(s, "axpy", {"elementwise", "memory-bound", "fp32"});
    add_task(s, "sgemm", {"matmul", "compute-bound", "fp32"});
    add_task(s, "rmsnorm", {"normalization", "memory-bound", "fp32"});

    int64_t ln0 = add_kernel(s, "layernorm", kernel_source("layernorm_rows",
        "extern __shared__ float partial[]; __syncthreads(); rsqrtf tree reduction"));
    int64_t ln1 = add_kernel(s, "layernorm", kernel_source("layernorm_rows",
        "__shfl_xor_sync warp reduction rsqrtf"), ln0);
    int64_t ln2 = add_kernel(s, "layernorm", kernel_source("layernorm_rows",
        "__shfl_xor_sync warp reduction float4 rsqrtf"), ln1);
    int64_t ln3 = add_kernel(s, "layernorm", kernel_source("layernorm_rows",
        "atomicAdd partial sums rsqrtf"), ln0);
    int64_t ln4 = add_kernel(s, "layernorm", kernel_source("layernorm_rows",
        "cooperative partial __syncthreads rsqrtf"), ln0);
    fitting_ = add_pair(s, "layernorm", ln0, ln1, 2.1,
                        "warp shuffle reduction replaces the shared-memory tree and its "
                        "__syncthreads barriers", {"normalization", "memory-bound", "fp32"});
    same_lineage_ = add_pair(s, "layernorm", ln1, ln2, 1.3, "float4 loads on top of the shuffles",
                             {"normalization", "memory-bound", "fp32"});
    older_arch_ = add_pair(s, "layernorm", ln0, ln4, 1.6,
                           "fewer __syncthreads barriers in the shared-memory tree reduction",
                           {"normalization", "memory-bound", "fp32"}, "sm_80");
    warning_ = add_pair(s, "layernorm", ln0, ln3, 0.5,
                        "atomicAdd on partial sums serialized the reduction: slower",
                        {"normalization", "memory-bound", "fp32"});

    int64_t ax0 = add_kernel(s, "axpy", kernel_source("axpy", "scalar loads"));
    int64_t ax1 = add_kernel(s, "axpy", kernel_source("axpy", "float4 vectorized loads"), ax0);
    add_pair(s, "axpy", ax0, ax1, 1.4, "float4 vectorized loads", {"elementwise", "memory-bound", "fp32"});
    int64_t mm0 = add_kernel(s, "sgemm", kernel_source("sgemm", "naive loops"));
    int64_t mm1 = add_kernel(s, "sgemm", kernel_source("sgemm", "wmma tensor core tiles"), mm0);
    add_pair(s, "sgemm", mm0, mm1, 8.0, "tensor core tiles", {"matmul", "compute-bound", "fp32"});
  }

  RetrievalQuery query(int k = 4, bool negatives = true) const {
    RetrievalQuery q;
    q.task = "rmsnorm";
    q.family_tags = {"normalization", "memory-bound", "fp32"};
    q.gpu_arch = "sm_90";
    q.kernel_source = kSharedTreeKernel;
    q.k = k;
    q.include_negatives = negatives;
    return q;
  }

  std::vector<int64_t> ids(const RetrievalQuery& q) {
    auto result = store_->retrieve(q);
    EXPECT_TRUE(result.ok()) << result.error();
    std::vector<int64_t> out;
    if (result) {
      for (const auto& r : *result) out.push_back(r.pair.id);
    }
    return out;
  }

  TempDir dir_;
  std::optional<MemoryStore> store_;
  int64_t fitting_ = 0, same_lineage_ = 0, older_arch_ = 0, warning_ = 0;
};

TEST_F(RetrievalTest, TheFittingPairComesFirst) {
  auto result = ids(query(1, false));
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0], fitting_);
}

TEST_F(RetrievalTest, OnePairPerLineageThenTheOtherFamilyMembers) {
  auto result = ids(query(3, false));
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(result[0], fitting_);
  EXPECT_EQ(result[1], older_arch_);  // same family, another lineage
  // The second step of the fitting lineage is never shown next to the first.
  EXPECT_EQ(std::count(result.begin(), result.end(), same_lineage_), 0);
}

TEST_F(RetrievalTest, NegativesAreWarningsOnlyWhenAskedAndCapped) {
  auto without = ids(query(6, false));
  EXPECT_EQ(std::count(without.begin(), without.end(), warning_), 0);
  auto with = ids(query(6, true));
  EXPECT_EQ(std::count(with.begin(), with.end(), warning_), 1);
  auto result = *store_->retrieve(query(6, true));
  int negatives = 0;
  for (const auto& r : result) negatives += r.pair.is_negative;
  EXPECT_LE(negatives, 2);  // max(1, k / 3)
}

TEST(RetrievalUsefulnessTest, MeasuredUsefulnessDecidesBetweenEqualPairs) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "scan", {"scan", "memory-bound", "fp32"});
  // Two branches that look the same to BM25 and every boost.
  int64_t root = add_kernel(store, "scan", kernel_source("scan", "blelloch tree"));
  int64_t one = add_kernel(store, "scan", kernel_source("scan", "decoupled lookback alpha"), root);
  int64_t two = add_kernel(store, "scan", kernel_source("scan", "decoupled lookback omega"), root);
  int64_t first = add_pair(store, "scan", root, one, 1.8, "decoupled lookback", {"scan"});
  int64_t second = add_pair(store, "scan", root, two, 1.8, "decoupled lookback", {"scan"});
  RetrievalQuery q;
  q.task = "scan";
  q.family_tags = {"scan"};
  q.kernel_source = "blelloch tree";
  q.k = 2;
  auto before = *store.retrieve(q);
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0].pair.id, first);  // a tie goes to the lower id
  EXPECT_DOUBLE_EQ(before[0].score, before[1].score);
  // Shown five times each; only the second one's prompts improved.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store.mark_retrieved({first, second}).ok());
    ASSERT_TRUE(store.record_outcome(first, false).ok());
    ASSERT_TRUE(store.record_outcome(second, true).ok());
  }
  auto after = *store.retrieve(q);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].pair.id, second);
  EXPECT_NEAR(after[0].score - after[1].score, 0.5 * (6.0 / 7.0 - 1.0 / 7.0), 1e-9);
}

TEST_F(RetrievalTest, SameTaskPairsAreCandidatesEvenWithoutWordMatches) {
  RetrievalQuery q;
  q.task = "sgemm";
  q.k = 1;
  q.kernel_source = "nothing in common";
  auto result = *store_->retrieve(q);
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0].pair.task, "sgemm");
}

TEST_F(RetrievalTest, DeterministicForTheSameDatabaseAndQuery) {
  auto first = *store_->retrieve(query(5, true));
  for (int i = 0; i < 5; ++i) {
    auto again = *store_->retrieve(query(5, true));
    ASSERT_EQ(again.size(), first.size());
    for (size_t j = 0; j < first.size(); ++j) {
      EXPECT_EQ(again[j].pair.id, first[j].pair.id);
      EXPECT_EQ(again[j].score, first[j].score);
    }
  }
  // A copy of the file answers the same.
  ASSERT_TRUE(store_->database().execute("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  std::filesystem::copy_file(dir_ / "m.db", dir_ / "copy.db");
  auto copy = open_store(dir_ / "copy.db");
  auto from_copy = *copy.retrieve(query(5, true));
  ASSERT_EQ(from_copy.size(), first.size());
  for (size_t j = 0; j < first.size(); ++j) EXPECT_EQ(from_copy[j].pair.id, first[j].pair.id);
}

TEST_F(RetrievalTest, EmptyQueryAndZeroK) {
  EXPECT_TRUE(store_->retrieve(query(0))->empty());
  RetrievalQuery nothing;
  nothing.k = 3;
  auto result = store_->retrieve(nothing);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result->empty());
}

TEST(RetrievalScoringTest, ArchitectureSimilarity) {
  EXPECT_EQ(arch_similarity("sm_90", "sm_90a"), 1.0);
  EXPECT_EQ(arch_similarity("sm_90", "9.0"), 1.0);
  EXPECT_EQ(arch_similarity("sm_86", "sm_80"), 0.5);
  EXPECT_EQ(arch_similarity("sm_100", "sm_90"), 0.0);
  EXPECT_EQ(arch_similarity("", "sm_90"), 0.0);
}

TEST(RetrievalScoringTest, SelectDiverseTieBreaksOnIdAndCapsNegatives) {
  std::vector<RetrievedPair> candidates;
  for (int64_t id : {5, 3, 4, 1, 2}) {
    RetrievedPair r;
    r.pair.id = id;
    r.pair.lineage_root_id = id;
    r.pair.is_negative = id >= 4;
    r.score = 1.0;
    candidates.push_back(r);
  }
  auto chosen = select_diverse(candidates, 4);
  std::vector<int64_t> ids;
  for (const auto& c : chosen) ids.push_back(c.pair.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4}));  // 5 is a second negative: over the cap
}

}  // namespace
}  // namespace kopt::memory
