// Pruning: caps per task and family, least useful first, and a dry run that changes nothing.
#include <gtest/gtest.h>

#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(open_store(dir_ / "m.db"));
    add_task(*store_, "axpy", {"elementwise"});
    add_task(*store_, "gelu", {"elementwise"});
    int64_t root = add_kernel(*store_, "axpy", kernel_source("axpy", "root"));
    // Four axpy pairs: speedups 1.1, 1.5, 2.0, 3.0; and one made useful by its record.
    double speedups[] = {1.1, 1.5, 2.0, 3.0};
    for (int i = 0; i < 4; ++i) {
      int64_t k = add_kernel(*store_, "axpy", kernel_source("axpy", "v" + std::to_string(i)), root);
      axpy_.push_back(add_pair(*store_, "axpy", root, k, speedups[i], "p", {"elementwise"}));
    }
    int64_t groot = add_kernel(*store_, "gelu", kernel_source("gelu", "root"));
    int64_t g1 = add_kernel(*store_, "gelu", kernel_source("gelu", "g1"), groot);
    gelu_ = add_pair(*store_, "gelu", groot, g1, 1.2, "g", {"elementwise"});
    negative_ = add_pair(*store_, "gelu", g1, groot, 0.7, "slower", {"elementwise"});
  }

  TempDir dir_;
  std::optional<MemoryStore> store_;
  std::vector<int64_t> axpy_;
  int64_t gelu_ = 0, negative_ = 0;
};

TEST_F(PruneTest, DryRunListsTheLeastUsefulAndChangesNothing) {
  PruneCaps caps;
  caps.max_pairs_per_task = 2;
  caps.dry_run = true;
  auto result = store_->prune(caps);
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->removed.size(), 2u);
  EXPECT_EQ(result->removed[0].id, axpy_[0]);  // 1.1x: least useful, listed first
  EXPECT_EQ(result->removed[1].id, axpy_[1]);
  EXPECT_EQ(result->reasons[0], "task axpy over 2");
  EXPECT_EQ(*store_->database().query_int64("SELECT count(*) FROM pairs"), 6);
}

TEST_F(PruneTest, PruneDropsThemAndTheirIndexRows) {
  PruneCaps caps;
  caps.max_pairs_per_task = 2;
  caps.dry_run = false;
  auto result = store_->prune(caps);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->removed.size(), 2u);
  EXPECT_EQ(*store_->database().query_int64("SELECT count(*) FROM pairs"), 4);
  EXPECT_EQ(*store_->database().query_int64("SELECT count(*) FROM pair_fts"), 4);
  EXPECT_FALSE(store_->pair(axpy_[0])->has_value());
  EXPECT_TRUE(store_->pair(axpy_[3])->has_value());
  // Kernels are the record of what was measured: never pruned.
  EXPECT_EQ(*store_->database().query_int64("SELECT count(*) FROM kernels"), 7);
  // Pruning again with the same caps finds nothing more.
  EXPECT_TRUE(store_->prune(caps)->removed.empty());
}

TEST_F(PruneTest, MeasuredUsefulnessProtectsASmallSpeedup) {
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(store_->record_outcome(axpy_[0], true).ok());
  PruneCaps caps;
  caps.max_pairs_per_task = 3;
  auto result = *store_->prune(caps);
  ASSERT_EQ(result.removed.size(), 1u);
  EXPECT_EQ(result.removed[0].id, axpy_[1]);  // 1.5x, never shown to help
}

TEST_F(PruneTest, FamilyAndNegativeCaps) {
  PruneCaps caps;
  caps.max_pairs_per_family = 4;  // five positive elementwise pairs over both tasks
  caps.max_negatives_per_task = 0;
  auto result = *store_->prune(caps);
  ASSERT_EQ(result.removed.size(), 2u);
  std::vector<int64_t> ids = {result.removed[0].id, result.removed[1].id};
  EXPECT_NE(std::find(ids.begin(), ids.end(), negative_), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), axpy_[0]), ids.end());
  caps.max_pairs_per_task = -1;
  EXPECT_FALSE(store_->prune(caps).ok());
}

}  // namespace
}  // namespace kopt::memory

namespace kopt::memory {
namespace {

using namespace testing;

TEST(PrunePolicy, TunerPairsHaveACapOfTheirOwn) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t root = add_kernel(store, "axpy", kernel_source("axpy", "root"));
  std::vector<int64_t> tuner_pairs;
  for (int i = 0; i < 3; ++i) {
    int64_t k = add_kernel(store, "axpy", kernel_source("axpy", "t" + std::to_string(i)), root);
    ASSERT_TRUE(store.database()
                    .execute("UPDATE kernels SET origin_tuner = 1 WHERE id = " + std::to_string(k))
                    .ok());
    tuner_pairs.push_back(
        add_pair(store, "axpy", root, k, 1.1 + 0.1 * i, "BLOCK", {"elementwise"}));
  }
  int64_t coder = add_kernel(store, "axpy", kernel_source("axpy", "float4"), root);
  int64_t technique = add_pair(store, "axpy", root, coder, 1.05, "float4 loads", {"elementwise"});
  PruneCaps caps;
  caps.max_tuner_pairs_per_task = 1;
  auto result = *store.prune(caps);
  ASSERT_EQ(result.removed.size(), 2u);
  // The two least useful tuner pairs go; the weakest technique pair stays.
  EXPECT_EQ(result.removed[0].id, tuner_pairs[0]);
  EXPECT_EQ(result.removed[1].id, tuner_pairs[1]);
  EXPECT_EQ(result.reasons[0], "tuner pairs of task axpy over 1");
  for (const auto& p : result.removed) EXPECT_NE(p.id, technique);
  caps.max_tuner_pairs_per_task = -1;
  EXPECT_FALSE(store.prune(caps).ok());
}

}  // namespace
}  // namespace kopt::memory
