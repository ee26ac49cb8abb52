// Retrieval on a hand-built memory where the right answer is known: relevance, boosts, lineage
// diversity, negatives as warnings, usefulness, and determinism.
#include "memory_store/retrieval.h"

#include <gtest/gtest.h>

#include <set>

#include "memory_store/memory_store.h"
#include "memory_store/production_baselines.h"
#include "sandbox/profile_bottleneck.h"
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

    int64_t ln0 = add_kernel(
        s, "layernorm",
        kernel_source("layernorm_rows",
                      "extern __shared__ float partial[]; __syncthreads(); rsqrtf tree reduction"));
    int64_t ln1 =
        add_kernel(s, "layernorm",
                   kernel_source("layernorm_rows", "__shfl_xor_sync warp reduction rsqrtf"), ln0);
    int64_t ln2 = add_kernel(
        s, "layernorm",
        kernel_source("layernorm_rows", "__shfl_xor_sync warp reduction float4 rsqrtf"), ln1);
    int64_t ln3 = add_kernel(s, "layernorm",
                             kernel_source("layernorm_rows", "atomicAdd partial sums rsqrtf"), ln0);
    int64_t ln4 = add_kernel(
        s, "layernorm", kernel_source("layernorm_rows", "cooperative partial __syncthreads rsqrtf"),
        ln0);
    fitting_ = add_pair(s, "layernorm", ln0, ln1, 2.1,
                        "warp shuffle reduction replaces the shared-memory tree and its "
                        "__syncthreads barriers",
                        {"normalization", "memory-bound", "fp32"});
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
    add_pair(s, "axpy", ax0, ax1, 1.4, "float4 vectorized loads",
             {"elementwise", "memory-bound", "fp32"});
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

TEST_F(RetrievalTest, OneExamplePerTaskAndTechnique) {
  auto result = ids(query(3, false));
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(result[0], fitting_);
  EXPECT_EQ(result[1], older_arch_);  // same family, another technique
  // The second step of the fitting lineage teaches vector loads, which nothing shown teaches:
  // a night's later steps are examples too (not only the first step below the root).
  EXPECT_EQ(result[2], same_lineage_);

  // Another layernorm pair teaching exactly what the fitting pair teaches is not shown beside
  // it, however well it scores.
  MemoryStore& s = *store_;
  int64_t root = add_kernel(
      s, "layernorm",
      kernel_source(
          "layernorm_rows",
          "extern __shared__ float partial[]; __syncthreads(); rsqrtf tree reduction twin"));
  int64_t twin = add_kernel(
      s, "layernorm", kernel_source("layernorm_rows", "__shfl_xor_sync warp reduction rsqrtf twin"),
      root);
  int64_t repeat = add_pair(s, "layernorm", root, twin, 2.5,
                            "warp shuffle reduction replaces the shared-memory tree and its "
                            "__syncthreads barriers",
                            {"normalization", "memory-bound", "fp32"});
  auto shown = *store_->retrieve(query(6, false));
  std::vector<std::string> keys;
  for (const auto& r : shown) keys.push_back(example_key(r));
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());
  bool both = std::count_if(shown.begin(), shown.end(), [&](const RetrievedPair& r) {
                return r.pair.id == repeat || r.pair.id == fitting_;
              }) == 2;
  EXPECT_FALSE(both);
}

// An absolute relevance threshold: a pair of another task and family that shares almost none of
// the query's words is not shown, even when it is the best (the only) candidate.
TEST(RetrievalRelevance, TheBestOfUnrelatedPairsIsNotShown) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "sgemm", {"matmul", "compute-bound", "fp32"});
  int64_t slow = add_kernel(store, "sgemm", kernel_source("sgemm", "naive loops"));
  int64_t fast = add_kernel(store, "sgemm", kernel_source("sgemm", "wmma tensor core tiles"), slow);
  add_pair(store, "sgemm", slow, fast, 8.0, "tensor core tiles", {"matmul", "compute-bound"});
  RetrievalQuery q;
  q.task = "layernorm";
  q.family_tags = {"normalization", "memory-bound", "fp32"};
  q.kernel_source = kSharedTreeKernel;
  q.k = 4;
  q.max_tuner_pairs = 0;
  auto result = store.retrieve(q);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result->empty());
  // The same pair is shown to its own task, and to its family, whatever the words.
  q.task = "sgemm";
  EXPECT_EQ(store.retrieve(q)->size(), 1u);
  q.task = "hgemm";
  q.family_tags = {"matmul"};
  EXPECT_EQ(store.retrieve(q)->size(), 1u);
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

// ---- Profiles as retrieval features (issue 14) ----

// A one-kernel profile with the numbers the classifier reads; "selected" (issuing) is the largest
// warp state, so the top stall must skip it.
KernelProfile profile(double dram, double sm, double occupancy, const std::string& top_stall) {
  KernelProfile p;
  p.kernels = 1;
  p.duration_us = 100;
  p.dram_percent = dram;
  p.sm_percent = sm;
  p.occupancy_percent = occupancy;
  p.instructions = 1e6;
  p.stalls = {{"selected", 40}, {top_stall, 35}, {"wait", 5}};
  return p;
}

KernelProfile with_conflicts(KernelProfile p, double wavefronts, double conflicts) {
  p.shared_wavefronts = wavefronts;
  p.bank_conflicts = conflicts;
  return p;
}

std::string class_of(const KernelProfile& p) { return bottleneck_name(classify_bottleneck(p)); }

TEST(BottleneckTest, SpeedOfLightFirst) {
  EXPECT_EQ(class_of(profile(88, 20, 90, "long_scoreboard")), "dram_bandwidth");  // a copy
  EXPECT_EQ(class_of(profile(60, 20, 90, "long_scoreboard")), "dram_bandwidth");
  EXPECT_EQ(class_of(profile(59, 20, 90, "long_scoreboard")), "memory_latency");
  EXPECT_EQ(class_of(profile(20, 75, 60, "math_pipe_throttle")), "compute");
  // Both busy: the busier unit names the limit.
  EXPECT_EQ(class_of(profile(65, 80, 60, "math_pipe_throttle")), "compute");
  EXPECT_EQ(class_of(profile(80, 65, 60, "long_scoreboard")), "dram_bandwidth");
  KernelProfile mma = profile(20, 70, 40, "gmma");
  mma.tensor_percent = 72;
  EXPECT_EQ(class_of(mma), "tensor");
  mma.tensor_percent = 30;  // tensor work, but another SM unit is what is busy
  EXPECT_EQ(class_of(mma), "compute");
}

TEST(BottleneckTest, BankConflictsWhenTheyAreALargeShareOfRealWork) {
  // A planted 32-way conflict: 31 of every 32 wavefronts are replays. The replays keep the
  // shared pipe (and so the SM) busy, but the cure is padding, not fewer instructions.
  auto planted = with_conflicts(profile(15, 70, 60, "mio_throttle"), 3.2e6, 3.1e6);
  EXPECT_EQ(class_of(planted), "shared_bank_conflicts");
  // A large share of few wavefronts (2% of the instructions): not what costs the time.
  EXPECT_EQ(class_of(with_conflicts(profile(15, 70, 60, "mio_throttle"), 4e4, 2e4)), "compute");
  // Many wavefronts, few of them replays (10%).
  EXPECT_EQ(class_of(with_conflicts(profile(15, 70, 60, "mio_throttle"), 1e7, 1e6)), "compute");
  // Behind a saturated DRAM, conflicts are not the limit.
  EXPECT_EQ(class_of(with_conflicts(profile(85, 40, 60, "long_scoreboard"), 3.2e6, 3.1e6)),
            "dram_bandwidth");
}

TEST(BottleneckTest, LatencyBoundKernelsByOccupancyThenTheirMainWait) {
  EXPECT_EQ(class_of(profile(35, 15, 60, "long_scoreboard")), "memory_latency");
  EXPECT_EQ(class_of(profile(35, 15, 18, "long_scoreboard")), "occupancy_latency");
  EXPECT_EQ(class_of(profile(10, 20, 70, "barrier")), "latency");
  EXPECT_EQ(class_of(KernelProfile{}), "unknown");  // nothing measured
}

TEST(BottleneckTest, StoredProfilesAndThePromptLine) {
  KernelProfile copy = profile(88, 20, 90, "long_scoreboard");
  EXPECT_EQ(bottleneck_of_profile_json(to_json(copy).dump()), "dram_bandwidth");
  for (const char* none : {"{}", "", "not json", R"({"dram_percent": 90})", "[1]"})
    EXPECT_EQ(bottleneck_of_profile_json(none), "unknown") << none;
  // The memo answers as the function does, the second round from its memory.
  BottleneckMemo memo;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(memo(to_json(copy).dump()), "dram_bandwidth");
    EXPECT_EQ(memo(to_json(profile(35, 15, 18, "long_scoreboard")).dump()), "occupancy_latency");
    EXPECT_EQ(memo("{}"), "unknown");
  }
  std::string line = describe_profile_and_bottleneck(copy);
  EXPECT_EQ(line, describe_profile(copy) + " -> bound by DRAM bandwidth");
  EXPECT_EQ(describe_profile_and_bottleneck(KernelProfile{}), describe_profile(KernelProfile{}));
}

// Two lineages that look the same to BM25 and every other term; only their slow kernels' newest
// profiles differ: memory-latency-bound for one, compute-bound for the other.
class RetrievalBottleneckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(open_store(dir_ / "m.db"));
    MemoryStore& s = *store_;
    add_task(s, "transpose", {"transpose", "memory-bound", "fp32"});
    int64_t slow_a = add_kernel(s, "transpose", kernel_source("transpose", "tiled alpha"));
    int64_t fast_a =
        add_kernel(s, "transpose", kernel_source("transpose", "diagonal alpha"), slow_a);
    int64_t slow_b = add_kernel(s, "transpose", kernel_source("transpose", "tiled omega"));
    int64_t fast_b =
        add_kernel(s, "transpose", kernel_source("transpose", "diagonal omega"), slow_b);
    compute_pair_ =
        add_pair(s, "transpose", slow_a, fast_a, 1.8, "diagonal block order", {"transpose"});
    latency_pair_ =
        add_pair(s, "transpose", slow_b, fast_b, 1.8, "diagonal block order", {"transpose"});
    // Each slow kernel was profiled twice; the newest profile is the one that counts.
    add_profile(slow_a, profile(35, 15, 60, "long_scoreboard"));
    add_profile(slow_a, profile(20, 75, 60, "math_pipe_throttle"));
    add_profile(slow_b, profile(20, 75, 60, "math_pipe_throttle"));
    add_profile(slow_b, profile(35, 15, 60, "long_scoreboard"));
  }

  void add_profile(int64_t kernel, const KernelProfile& p) {
    EvaluationRecord e;
    e.kernel_id = kernel;
    e.task = "transpose";
    e.gpu.model = "NVIDIA H100 80GB HBM3";
    e.verdict = Verdict::kOk;
    e.median_us = 100;
    e.profile_json = to_json(p).dump();
    ASSERT_TRUE(store_->add_evaluation(e).ok());
  }

  RetrievalQuery query(const std::string& bottleneck) const {
    RetrievalQuery q;
    q.task = "transpose";
    q.family_tags = {"transpose"};
    q.kernel_source = "tiled";
    q.k = 2;
    q.bottleneck = bottleneck;
    q.bottleneck_of_profile = bottleneck_of_profile_json;
    return q;
  }

  std::vector<RetrievedPair> retrieve(const RetrievalQuery& q) {
    auto result = store_->retrieve(q);
    EXPECT_TRUE(result.ok()) << result.error();
    EXPECT_EQ(result ? result->size() : 0, 2u);
    return result && result->size() == 2 ? *result : std::vector<RetrievedPair>(2);
  }

  TempDir dir_;
  std::optional<MemoryStore> store_;
  int64_t compute_pair_ = 0, latency_pair_ = 0;
};

TEST_F(RetrievalBottleneckTest, APairWhoseSlowSideHadTheSameLimitRanksFirst) {
  auto latency = retrieve(query("memory_latency"));
  EXPECT_EQ(latency[0].pair.id, latency_pair_);
  EXPECT_EQ(latency[0].slow_bottleneck, "memory_latency");
  EXPECT_EQ(latency[1].slow_bottleneck, "compute");
  EXPECT_NEAR(latency[0].score - latency[1].score, 0.4, 1e-9);
  auto compute = retrieve(query("compute"));
  EXPECT_EQ(compute[0].pair.id, compute_pair_);
  EXPECT_NEAR(compute[0].score - compute[1].score, 0.4, 1e-9);
}

TEST_F(RetrievalBottleneckTest, AnUnknownClassChangesNothing) {
  RetrievalQuery plain = query("");
  plain.bottleneck_of_profile = nullptr;
  auto before = retrieve(plain);
  EXPECT_EQ(before[0].pair.id, compute_pair_);  // a tie goes to the lower id
  EXPECT_DOUBLE_EQ(before[0].score, before[1].score);
  RetrievalQuery no_classifier = query("memory_latency");
  no_classifier.bottleneck_of_profile = nullptr;
  for (const RetrievalQuery& q : {query(""), query("unknown"), no_classifier}) {
    auto after = retrieve(q);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(after[i].pair.id, before[i].pair.id) << q.bottleneck;
      EXPECT_EQ(after[i].score, before[i].score) << q.bottleneck;
      EXPECT_EQ(after[i].slow_bottleneck, "unknown") << q.bottleneck;  // not even looked up
    }
  }
}

TEST_F(RetrievalTest, AProfiledQueryOverUnprofiledPairsScoresAsBefore) {
  auto before = *store_->retrieve(query(5, true));
  RetrievalQuery q = query(5, true);
  q.bottleneck = "memory_latency";
  q.bottleneck_of_profile = bottleneck_of_profile_json;
  auto after = *store_->retrieve(q);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].pair.id, before[i].pair.id);
    EXPECT_EQ(after[i].score, before[i].score);
  }
}

// Two lineages alike in every term but one: the second's fast kernel reached the speed of the
// best production baseline measured for the task on the pair's GPU model (a real SQLite file
// with production_baselines rows, as `kopt baselines` writes them).
TEST(RetrievalProductionTest, APairThatReachedProductionSpeedRanksFirst) {
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  TempDir dir;
  MemoryStore s = open_store(dir / "m.db");
  add_task(s, "transpose", {"transpose", "memory-bound", "fp32"});
  int64_t slow_a = add_kernel(s, "transpose", kernel_source("transpose", "tiled alpha"));
  int64_t fast_a = add_kernel(s, "transpose", kernel_source("transpose", "diagonal alpha"), slow_a);
  int64_t slow_b = add_kernel(s, "transpose", kernel_source("transpose", "tiled omega"));
  int64_t fast_b = add_kernel(s, "transpose", kernel_source("transpose", "diagonal omega"), slow_b);
  int64_t pair_a =
      add_pair(s, "transpose", slow_a, fast_a, 1.8, "diagonal block order", {"transpose"});
  int64_t pair_b =
      add_pair(s, "transpose", slow_b, fast_b, 1.8, "diagonal block order", {"transpose"});
  auto evaluate = [&](int64_t kernel, double us, const std::string& verdict) {
    EvaluationRecord e;
    e.kernel_id = kernel;
    e.task = "transpose";
    e.gpu.model = h100;
    e.verdict = parse_verdict(verdict).value();  // a misspelt name throws
    e.median_us = us;
    ASSERT_TRUE(s.add_evaluation(e).ok());
  };
  evaluate(fast_a, 50, "ok");
  evaluate(fast_b, 60, "ok");
  evaluate(fast_b, 40, "ok");         // the newest verified time counts
  evaluate(fast_a, 30, "incorrect");  // a wrong kernel's time counts for nothing
  auto production = [&](const std::string& gpu, const std::string& name, double us) {
    ProductionBaselineRecord r;
    r.task = "transpose";
    r.gpu_model = gpu;
    r.name = name;
    r.median_us = us;
    ASSERT_TRUE(add_production_baseline(s.database(), r).ok());
  };
  RetrievalQuery q;
  q.task = "transpose";
  q.family_tags = {"transpose"};
  q.kernel_source = "tiled";
  q.k = 2;
  auto retrieve = [&] {
    auto result = s.retrieve(q);
    EXPECT_TRUE(result.ok()) << result.error();
    EXPECT_EQ(result ? result->size() : 0, 2u);
    return result && result->size() == 2 ? *result : std::vector<RetrievedPair>(2);
  };

  // Nothing measured on this GPU model (only on another): a tie, the lower id first.
  production("NVIDIA A100-SXM4-80GB", "torch_compile", 45);
  auto before = retrieve();
  EXPECT_EQ(before[0].pair.id, pair_a);
  EXPECT_DOUBLE_EQ(before[0].score, before[1].score);
  EXPECT_EQ(before[1].production_name, "");
  EXPECT_DOUBLE_EQ(before[1].fast_us, 40);

  // torch.compile at 45 us on the H100: kernel b (40 us) reached it, kernel a (50 us) did not.
  production(h100, "torch_compile", 45);
  auto after = retrieve();
  EXPECT_EQ(after[0].pair.id, pair_b);
  EXPECT_TRUE(after[0].reached_production());
  EXPECT_EQ(after[0].production_name, "torch_compile");
  EXPECT_FALSE(after[1].reached_production());
  EXPECT_NEAR(after[0].score - after[1].score, 0.3, 1e-9);

  // cuBLASLt measured faster still (35 us): the best production baseline is the bar, and
  // neither reached it.
  production(h100, "cublaslt_autotuned", 35);
  auto stricter = retrieve();
  EXPECT_EQ(stricter[0].pair.id, pair_a);
  EXPECT_EQ(stricter[0].production_name, "cublaslt_autotuned");
  EXPECT_DOUBLE_EQ(stricter[0].score, stricter[1].score);
}

TEST(RetrievalScoringTest, TheBottleneckTermNeedsTwoEqualKnownClasses) {
  RetrievalQuery q;
  PairRecord pair;
  double base = non_text_score(q, pair);
  q.bottleneck = "memory_latency";
  EXPECT_NEAR(non_text_score(q, pair, "memory_latency") - base, 0.4, 1e-12);
  EXPECT_EQ(non_text_score(q, pair, "compute"), base);
  EXPECT_EQ(non_text_score(q, pair, "unknown"), base);
  EXPECT_EQ(non_text_score(q, pair), base);
  q.bottleneck = "unknown";
  EXPECT_EQ(non_text_score(q, pair, "unknown"), base);
  q.bottleneck = "";
  EXPECT_EQ(non_text_score(q, pair, ""), base);
}

}  // namespace
}  // namespace kopt::memory

namespace kopt::memory {
namespace {

using namespace testing;

RetrievedPair scored(int64_t id, double score, std::vector<std::string> techniques,
                     bool tuner = false, int64_t fast = 0) {
  RetrievedPair r;
  r.pair.id = id;
  r.pair.lineage_root_id = id;
  r.pair.fast_kernel_id = fast ? fast : 100 + id;
  r.pair.speedup = 1.5;
  r.score = score;
  r.techniques = std::move(techniques);
  r.tuner_only = tuner;
  return r;
}

std::vector<int64_t> ids_of(const std::vector<RetrievedPair>& pairs) {
  std::vector<int64_t> out;
  for (const auto& p : pairs) out.push_back(p.pair.id);
  return out;
}

TEST(RetrievalTeaching, NoTunerPairsAsExamplesUnlessAsked) {
  std::vector<RetrievedPair> c = {scored(1, 3.0, {"tuning"}, true),
                                  scored(2, 2.9, {"tuning"}, true),
                                  scored(3, 1.0, {"vector_loads"}), scored(4, 0.5, {"fusion"})};
  EXPECT_EQ(ids_of(select_diverse(c, 3)), (std::vector<int64_t>{3, 4}));
  RetrievalQuery one;
  one.max_tuner_pairs = 1;
  EXPECT_EQ(ids_of(select_diverse(c, 3, one)), (std::vector<int64_t>{1, 3, 4}));
}

TEST(RetrievalTeaching, ATechniqueNotShownYetGoesBeforeARepeat) {
  // Three online-softmax pairs score highest; the register-resident one must still be shown.
  std::vector<RetrievedPair> c = {
      scored(1, 3.0, {"online_softmax"}), scored(2, 2.9, {"online_softmax"}),
      scored(3, 2.8, {"online_softmax", "warp_shuffle"}), scored(4, 1.0, {"register_resident"})};
  EXPECT_EQ(ids_of(select_diverse(c, 3)), (std::vector<int64_t>{1, 3, 4}));
  // With room left, a repeat of another task fills it by score; one of the same task does not
  // (one example per task and technique).
  c[1].pair.task = "other";
  EXPECT_EQ(ids_of(select_diverse(c, 4)), (std::vector<int64_t>{1, 2, 3, 4}));
  c[1].pair.task = c[0].pair.task;
  EXPECT_EQ(ids_of(select_diverse(c, 4)), (std::vector<int64_t>{1, 3, 4}));
}

TEST(RetrievalTeaching, ExcludedAndNearCopyFastKernelsAreNeverShown) {
  std::vector<RetrievedPair> c = {scored(1, 3.0, {}, false, 7), scored(2, 2.0, {}, false, 8),
                                  scored(3, 1.0, {})};
  RetrievalQuery q;
  q.exclude_kernels = {7};
  q.near_copy = [](const std::string& source) { return source == "copy"; };
  auto source_of = [](int64_t id) { return id == 8 ? std::string("copy") : std::string("x"); };
  EXPECT_EQ(ids_of(select_diverse(c, 3, q, source_of)), (std::vector<int64_t>{3}));
}

TEST(RetrievalTeaching, NoveltyRewardsWhatTheCurrentKernelLacks) {
  RetrievalQuery q;
  q.current_techniques = {"online_softmax"};
  PairRecord pair;
  pair.speedup = 1.5;
  double repeat = non_text_score(q, pair, "unknown", {"online_softmax"});
  double fresh = non_text_score(q, pair, "unknown", {"register_resident"});
  double unknown = non_text_score(q, pair, "unknown", {});
  EXPECT_NEAR(fresh - repeat, 0.6, 1e-12);
  EXPECT_NEAR(unknown - repeat, 0.3, 1e-12);
}

TEST(RetrievalTeaching, TheCurrentKernelsLineageIsExcludedFromTheStore) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "softmax", {"reduction"});
  int64_t k0 = add_kernel(store, "softmax", kernel_source("softmax", "naive three pass"));
  int64_t k1 = add_kernel(store, "softmax", kernel_source("softmax", "online max sum"), k0);
  int64_t k2 = add_kernel(store, "softmax", kernel_source("softmax", "online warp shfl"), k1);
  int64_t other = add_kernel(store, "softmax", kernel_source("softmax", "registers rows"), k0);
  int64_t created_parent = add_pair(store, "softmax", k0, k1, 1.7, "online softmax", {"reduction"});
  int64_t created_current = add_pair(store, "softmax", k1, k2, 1.1, "warp shuffle", {"reduction"});
  int64_t elsewhere =
      add_pair(store, "softmax", k0, other, 1.05, "row held in registers", {"reduction"});
  RetrievalQuery q;
  q.task = "softmax";
  q.k = 4;
  q.kernel_source = "online warp shfl";
  // Without the current kernel's id, its own lineage's stronger pairs are shown first.
  auto all = ids_of(*store.retrieve(q));
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(all[0] == created_parent || all[0] == created_current);
  q.current_kernel_id = k2;
  auto shown = ids_of(*store.retrieve(q));
  EXPECT_EQ(shown, (std::vector<int64_t>{elsewhere}));
  EXPECT_EQ(std::count(shown.begin(), shown.end(), created_current), 0);
}

TEST(RetrievalTeaching, ATunerPairIsLabelledTuning) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t root = add_kernel(store, "axpy", kernel_source("axpy", "scalar"));
  int64_t tuned = add_kernel(store, "axpy", kernel_source("axpy", "scalar block"), root);
  ASSERT_TRUE(
      store.database()
          .execute("UPDATE kernels SET origin_tuner = 1 WHERE id = " + std::to_string(tuned))
          .ok());
  add_pair(store, "axpy", root, tuned, 1.2, "BLOCK=1024 instead of 256", {"elementwise"});
  RetrievalQuery q;
  q.task = "axpy";
  q.k = 2;
  q.max_tuner_pairs = 1;
  auto result = *store.retrieve(q);
  ASSERT_EQ(result.size(), 1u);
  EXPECT_TRUE(result[0].tuner_only);
  EXPECT_EQ(result[0].techniques, std::vector<std::string>{"tuning"});
}

}  // namespace
}  // namespace kopt::memory
