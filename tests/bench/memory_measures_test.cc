// The memory measures (bench/memory_measures.h, issue 36) at a tiny size, so they cannot rot:
// real kernels of the suite, a real SQLite memory, kopt's real retrieval.
#include "bench/memory_measures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "bench/loo_measure.h"
#include "bench/planted_measure.h"
#include "memory_store/memory_store.h"
#include "memory_store/plan_store.h"

namespace kopt::bench {
namespace {

namespace fs = std::filesystem;

fs::path temp_db(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("kopt-memory-measures-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST(MemoryMetrics, RecallAndNdcgOfHandRankings) {
  Relevance relevance = {{7, 2}, {9, 1}};
  EXPECT_DOUBLE_EQ(recall_at({7, 9, 1, 2}, relevance), 1.0);
  EXPECT_DOUBLE_EQ(recall_at({1, 2, 3, 9}, relevance), 0.5);
  EXPECT_DOUBLE_EQ(recall_at({1, 2, 3, 4, 7}, relevance), 0.0);
  EXPECT_DOUBLE_EQ(ndcg_at({7, 9}, relevance), 1.0);
  EXPECT_LT(ndcg_at({9, 7}, relevance), 1.0);  // the better pair second costs
  EXPECT_GT(ndcg_at({9, 7}, relevance), ndcg_at({1, 9}, relevance));
  EXPECT_EQ(rank_of({4, 5, 6}, 6), 3u);
  EXPECT_EQ(rank_of({4, 5, 6}, 8), 0u);
}

TEST(MemoryCorpus, HoldsTheSuitesKernels) {
  auto corpus = load_corpus(KOPT_SOURCE_DIR);
  ASSERT_TRUE(corpus) << corpus.error();
  EXPECT_GE(corpus->size(), 22u);
  for (const auto& task : *corpus) {
    ASSERT_FALSE(task.tags.empty()) << task.name;
    ASSERT_FALSE(task.kernels.empty()) << task.name;
    EXPECT_NE(task.kernels.front().source.find("__global__"), std::string::npos) << task.name;
  }
}

// An easy case: one expert case among 12 distractors. kopt's retrieval must show the planted
// pair among its four, and the same ranking reversed (a broken ranking) must not: the assertion
// can fail.
TEST(MemoryPlanted, KoptShowsThePlantedPairInAnEasyCase) {
  auto corpus = load_corpus(KOPT_SOURCE_DIR);
  ASSERT_TRUE(corpus) << corpus.error();
  std::vector<ExpertCase> cases;
  for (const auto& c : expert_cases()) {
    if (c.task == "softmax") cases.push_back(c);
  }
  ASSERT_EQ(cases.size(), 1u);
  fs::path db = temp_db("planted.db");
  auto result = run_planted(*corpus, 12, 36, db, cases);
  ASSERT_TRUE(result) << result.error();
  ASSERT_EQ(result->cases.size(), 1u);
  const CaseOutcome& outcome = result->cases.front();
  EXPECT_GE(outcome.rank, 1u);
  EXPECT_LE(outcome.rank, 4u) << "kopt ranked the planted pair " << outcome.rank;
  EXPECT_DOUBLE_EQ(result->methods.front().planted_at_4, 1.0);

  auto store = memory::MemoryStore::open(db);
  ASSERT_TRUE(store) << store.error();
  const CorpusTask& softmax =
      *std::find_if(corpus->begin(), corpus->end(), [](auto& t) { return t.name == "softmax"; });
  auto full = kopt_ranking(*store, "softmax", softmax.tags, softmax.kernels.front().source,
                           outcome.kernel_id, 100);
  ASSERT_TRUE(full) << full.error();
  ASSERT_GT(full->size(), 8u);
  std::vector<int64_t> broken(full->rbegin(), full->rend());
  broken.resize(4);
  EXPECT_EQ(rank_of(broken, outcome.planted_pair), 0u);
  fs::remove_all(db.parent_path());
}

}  // namespace
}  // namespace kopt::bench

namespace kopt::bench {
namespace {

const CorpusTask& task_named(const std::vector<CorpusTask>& corpus, const std::string& name) {
  return *std::find_if(corpus.begin(), corpus.end(), [&](auto& t) { return t.name == name; });
}

Status verified(memory::MemoryStore& store, int64_t kernel, const std::string& task, double us) {
  memory::EvaluationRecord e;
  e.kernel_id = kernel;
  e.task = task;
  e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "", ""};
  e.verdict = Verdict::kOk;
  e.median_us = us;
  auto id = store.add_evaluation(e);
  return id ? ok_status() : make_error(id.error());
}

// A recorded night by hand: one planner state (axpy's baseline) whose later descendant adds
// float4 loads and beats it 2x; that pair is the query's own lineage and is held out. Another
// axpy lineage taught float4 too (the oldest pair); eight newer pairs of the family teach
// other techniques. kopt's retrieval must show the float4 pair; the newest pairs of the family
// (a broken ranking for this query) must not, so the measure can tell them apart.
TEST(MemoryLeaveOneOut, GoldFromDescendantsAndTheLineageHeldOut) {
  auto corpus = load_corpus(KOPT_SOURCE_DIR);
  ASSERT_TRUE(corpus) << corpus.error();
  fs::path db = temp_db("night.db");
  int64_t held_out_pair = 0, right_pair = 0;
  {
    auto store = memory::MemoryStore::open(db);
    ASSERT_TRUE(store) << store.error();
    PairWriter writer(*store, *corpus, 7);
    const CorpusTask& axpy = task_named(*corpus, "axpy");
    ASSERT_GE(axpy.kernels.size(), 2u);
    auto parent = writer.real_kernel(axpy, 0);
    auto other_root = writer.real_kernel(axpy, 1);
    ASSERT_TRUE(parent && other_root);
    ASSERT_TRUE(verified(*store, *parent, "axpy", 100));
    auto right = writer.add_from(axpy, "vector_loads", *other_root, 0);
    ASSERT_TRUE(right) << right.error();
    for (int i = 0; i < 8; ++i) {
      const CorpusTask& t = task_named(*corpus, i % 2 ? "gelu" : "swiglu");
      auto slow = writer.real_kernel(t, 0);
      ASSERT_TRUE(slow);
      const char* taught[] = {"fusion", "tensor_cores", "split_k", "smem_padding"};
      ASSERT_TRUE(writer.add_from(t, taught[i % 4], *slow, 0));
    }
    memory::PlanRecord plan;
    plan.task = "axpy";
    plan.parent_kernel_id = *parent;
    plan.title = "float4 loads";
    plan.created_at = "2026-11-27T00:00:00Z";  // before every kernel the writer stores
    ASSERT_TRUE(memory::add_plan(store->database(), plan));
    auto answer = writer.add_from(axpy, "vector_loads", *parent, 0);
    ASSERT_TRUE(answer) << answer.error();
    held_out_pair = *answer;
    right_pair = *right;
    auto pair = store->pair(*answer);
    ASSERT_TRUE(pair && *pair);
    ASSERT_TRUE(verified(*store, (*pair)->fast_kernel_id, "axpy", 50));
  }
  auto result = run_loo(db);
  ASSERT_TRUE(result) << result.error();
  ASSERT_EQ(result->scored, 1);
  ASSERT_EQ(result->detail.size(), 1u);
  EXPECT_EQ(result->detail[0].gold, std::vector<std::string>{"vector_loads"});
  EXPECT_DOUBLE_EQ(result->methods[0].recall_at_4, 1.0) << loo_markdown(*result);
  const auto& shown = result->detail[0].shown_ids;
  EXPECT_NE(std::find(shown.begin(), shown.end(), right_pair), shown.end());
  EXPECT_EQ(std::find(shown.begin(), shown.end(), held_out_pair), shown.end());
  EXPECT_DOUBLE_EQ(result->methods[3].recall_at_4, 0.0) << loo_markdown(*result);
  fs::remove_all(db.parent_path());
}

}  // namespace
}  // namespace kopt::bench
