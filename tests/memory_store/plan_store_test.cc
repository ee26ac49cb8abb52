// Plans and transcripts (plan_store.h): the migration that adds their tables to a database of
// the version before, what is kept and read back, the caps, and the failed plans of earlier runs.
#include "memory_store/plan_store.h"

#include <gtest/gtest.h>

#include "memory_store/memory_store.h"
#include "memory_store/schema.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

TEST(PlanStoreTest, TheMigrationAddsTheTablesAndKeepsWhatWasThere) {
  TempDir dir;
  std::filesystem::path path = dir / "old.db";
  {
    OpenOptions options;
    options.target_version = 4;  // the version before plan_store's tables
    auto store = MemoryStore::open(path, options);
    ASSERT_TRUE(store.ok()) << store.error();
    EXPECT_FALSE(store->database().has_table("plans"));
    add_task(*store, "softmax", {"reduction"});
  }
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), kSchemaVersion);
  EXPECT_TRUE(db.has_table("plans"));
  EXPECT_TRUE(db.has_table("llm_transcripts"));
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM tasks WHERE name = 'softmax'"), 1);
  // Older code never names the new tables: the compatible version stays where it was.
  EXPECT_EQ(*compatible_version(db), kCompatibleVersion);
}

TEST(PlanStoreTest, PlansKeepParentTechniqueOutcomeAndChildren) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "softmax", {"reduction"});
  int64_t parent = add_kernel(store, "softmax", kernel_source("softmax", "naive"));
  int64_t child = add_kernel(store, "softmax", kernel_source("softmax", "online"), parent);
  int64_t run1 = *store.start_run("{}");
  PlanRecord plan;
  plan.run_id = run1;
  plan.task = "softmax";
  plan.parent_kernel_id = parent;
  plan.title = "online softmax";
  plan.technique = "online_softmax";
  auto failed = add_plan(store.database(), plan);
  ASSERT_TRUE(failed) << failed.error();
  ASSERT_TRUE(finish_plan(store.database(), *failed, "incorrect: -inf rows give NaN", {child}));
  plan.title = "float4 loads";
  auto good = add_plan(store.database(), plan);
  ASSERT_TRUE(finish_plan(store.database(), *good, "verified, 1.30x its parent", {child}));
  // A second sample of the same plan fails: the plan stays verified, with both kernels.
  ASSERT_TRUE(finish_plan(store.database(), *good, "incorrect: second sample", {parent}));
  plan.title = "still queued";
  ASSERT_TRUE(add_plan(store.database(), plan));
  plan.task = "no such task";
  EXPECT_FALSE(add_plan(store.database(), plan).ok());
  EXPECT_FALSE(finish_plan(store.database(), 999, "x", {}).ok());

  // A later run sees the failed one, with why, and not its own plans.
  auto earlier = failed_plans(store.database(), "softmax", run1 + 1, 10);
  ASSERT_TRUE(earlier) << earlier.error();
  ASSERT_EQ(earlier->size(), 1u);
  EXPECT_EQ(earlier->at(0).title, "online softmax");
  EXPECT_EQ(earlier->at(0).outcome, "incorrect: -inf rows give NaN");
  EXPECT_EQ(earlier->at(0).child_kernel_ids, std::vector<int64_t>{child});
  EXPECT_EQ(earlier->at(0).parent_kernel_id, parent);
  EXPECT_TRUE(failed_plans(store.database(), "softmax", run1, 10)->empty());
  // Every plan of earlier runs, oldest first, each with every attempt's kernels.
  auto all = earlier_plans(store.database(), "softmax", run1 + 1);
  ASSERT_TRUE(all) << all.error();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(all->at(1).outcome, "verified, 1.30x its parent");
  EXPECT_EQ(all->at(1).child_kernel_ids, (std::vector<int64_t>{child, parent}));
}

TEST(PlanStoreTest, APlansOutcomeIsItsBestAttemptNotItsLast) {
  EXPECT_EQ(merged_plan_outcome("verified, 1.30x its parent", "incorrect: x"),
            "verified, 1.30x its parent");
  EXPECT_EQ(merged_plan_outcome("incorrect: x", "verified, 0.90x its parent"),
            "verified, 0.90x its parent");
  EXPECT_EQ(merged_plan_outcome("verified, 1.30x its parent", "verified, 1.10x its parent"),
            "verified, 1.30x its parent");
  EXPECT_EQ(merged_plan_outcome("verified, 1.10x its parent", "verified, 1.30x its parent"),
            "verified, 1.30x its parent");
  EXPECT_EQ(merged_plan_outcome("queued", "compile_error: y"), "compile_error: y");
}

TEST(PlanStoreTest, TranscriptsAreKeptCappedAndReadBack) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  TranscriptRecord t;
  t.agent = "planner";
  t.task = "softmax";
  t.template_file = "planner.txt";
  t.system = "You optimize CUDA kernels.";
  t.prompt = std::string(kMaxTranscriptChars + 500, 'p') + "THE END";
  t.answer = "{\"plans\": []}";
  t.status = "ok";
  auto id = add_transcript(store.database(), t);
  ASSERT_TRUE(id) << id.error();
  auto back = transcript(store.database(), *id);
  ASSERT_TRUE(back && *back);
  const TranscriptRecord& r = **back;
  EXPECT_TRUE(r.cut);
  EXPECT_LE(r.prompt.size(), kMaxTranscriptChars + 100);
  EXPECT_NE(r.prompt.find("THE END"), std::string::npos);  // the end is kept
  EXPECT_EQ(r.answer, t.answer);
  EXPECT_EQ(r.system, t.system);
  auto list = list_transcripts(store.database(), std::nullopt, 10);
  ASSERT_TRUE(list) << list.error();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_TRUE(list->at(0).prompt.empty());
  EXPECT_EQ(list->at(0).prompt_chars, static_cast<int64_t>(r.prompt.size()));
  EXPECT_FALSE(*transcript(store.database(), *id + 1));
}

TEST(PlanStoreTest, TheOldestTranscriptsGoBeyondTheCap) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  // Ids far apart stand in for kMaxTranscripts calls.
  TranscriptRecord t;
  t.agent = "coder";
  t.prompt = "old";
  t.answer = "a";
  int64_t old = *add_transcript(store.database(), t);
  ASSERT_TRUE(store.database()
                  .execute("INSERT INTO llm_transcripts(id, agent, prompt, answer, created_at)"
                           " VALUES (" +
                           std::to_string(old + kMaxTranscripts - 1) +
                           ", 'coder', 'mid', 'a', 'now')")
                  .ok());
  t.prompt = "new";
  ASSERT_TRUE(add_transcript(store.database(), t));
  EXPECT_FALSE(*transcript(store.database(), old));
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM llm_transcripts"), 2);
}

}  // namespace
}  // namespace kopt::memory
