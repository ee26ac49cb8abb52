// The memory measures (bench/memory_measures.h, issue 36) at a tiny size, so they cannot rot:
// real kernels of the suite, a real SQLite memory, kopt's real retrieval.
#include "bench/memory_measures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "bench/planted_measure.h"
#include "memory_store/memory_store.h"

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
