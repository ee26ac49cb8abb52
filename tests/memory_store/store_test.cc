// Records in and out of a real SQLite file: tasks, content-addressed kernels, evaluations and the
// best verified kernel, runs with their LLM accounting, pairs with merging and lineage.
#include <gtest/gtest.h>

#include "common/scrub_secrets.h"
#include "common/sha256.h"
#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

EvaluationRecord evaluation(int64_t kernel, const std::string& verdict, double median_us,
                            const std::string& gpu = "NVIDIA H100 80GB HBM3") {
  EvaluationRecord e;
  e.kernel_id = kernel;
  e.task = "axpy";
  e.gpu = {gpu, "9.0", "580.159.04", "13.0"};
  e.verdict = parse_verdict(verdict).value();  // a misspelt name throws
  e.median_us = median_us;
  e.baseline_us = 400;
  e.speedup = 400 / median_us;
  e.sol_percent = 80;
  return e;
}

TEST(StoreTest, UpsertTaskUpdatesItsSpecByName) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  int64_t id = add_task(store, "axpy", {"elementwise"});
  TaskRecord changed;
  changed.name = "axpy";
  changed.spec_hash = "new-hash";
  changed.tags = {"elementwise", "fp32"};
  changed.spec_json = "{}";
  auto again = store.upsert_task(changed);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, id);
  auto task = store.find_task("axpy");
  ASSERT_TRUE(task.ok() && *task);
  EXPECT_EQ((*task)->spec_hash, "new-hash");
  EXPECT_EQ((*task)->tags, (std::vector<std::string>{"elementwise", "fp32"}));
  // The same spec again: same id, nothing changes.
  EXPECT_EQ(*store.upsert_task(changed), id);
  EXPECT_FALSE(store.find_task("nope")->has_value());
}

TEST(StoreTest, KernelsAreContentAddressed) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  std::string source = kernel_source("axpy", "plain");
  int64_t first = add_kernel(store, "axpy", source);
  int64_t second = add_kernel(store, "axpy", source);
  EXPECT_EQ(first, second);
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM kernels"), 1);
  auto kernel = store.kernel(first);
  ASSERT_TRUE(kernel.ok() && *kernel);
  EXPECT_EQ((*kernel)->sha256, sha256_hex(source));
  EXPECT_EQ((*kernel)->origin.model, "test-model");
  EXPECT_EQ(*store.find_kernel(sha256_hex(source)), first);
  int64_t child = add_kernel(store, "axpy", kernel_source("axpy", "vectorized float4"), first);
  EXPECT_EQ((*store.kernel(child))->parent_id, first);
}

TEST(StoreTest, KernelOfUnknownTaskIsRefused) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  KernelRecord kernel;
  kernel.task = "ghost";
  kernel.source = "x";
  auto id = store.add_kernel(kernel);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("unknown task 'ghost'"), std::string::npos) << id.error();
}

TEST(StoreTest, BestKernelIsTheFastestVerifiedOnThatGpu) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t slow = add_kernel(store, "axpy", kernel_source("axpy", "slow"));
  int64_t fast = add_kernel(store, "axpy", kernel_source("axpy", "fast"));
  int64_t wrong = add_kernel(store, "axpy", kernel_source("axpy", "wrong"));
  int64_t other = add_kernel(store, "axpy", kernel_source("axpy", "other gpu"));
  ASSERT_TRUE(store.add_evaluation(evaluation(slow, "ok", 300)).ok());
  ASSERT_TRUE(store.add_evaluation(evaluation(fast, "ok", 250)).ok());
  ASSERT_TRUE(store.add_evaluation(evaluation(wrong, "incorrect", 10)).ok());  // fast but wrong
  ASSERT_TRUE(store.add_evaluation(evaluation(other, "ok", 100, "NVIDIA A100")).ok());
  auto best = store.best_kernel("axpy", "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(best.ok() && *best) << best.error();
  EXPECT_EQ((*best)->kernel_id, fast);
  EXPECT_DOUBLE_EQ((*best)->median_us, 250);
  EXPECT_EQ((*best)->gpu.driver_version, "580.159.04");
  EXPECT_EQ((*store.best_kernel("axpy", "NVIDIA A100"))->kernel_id, other);
  EXPECT_FALSE(store.best_kernel("axpy", "NVIDIA B200")->has_value());
  auto gpus = store.verified_gpus("axpy");
  EXPECT_EQ(*gpus, (std::vector<std::string>{"NVIDIA H100 80GB HBM3", "NVIDIA A100"}));
}

TEST(StoreTest, RunsAndLlmCallTotals) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  EXPECT_FALSE(store.latest_run()->has_value());
  auto run = store.start_run("{\"budget_usd\": 5}");
  ASSERT_TRUE(run.ok());
  for (int i = 0; i < 3; ++i) {
    LlmCallRecord call;
    call.run_id = *run;
    call.agent = "coder";
    call.provider = "openai";
    call.model = "gpt-test";
    call.prompt_tokens = 1000;
    call.completion_tokens = 200;
    call.cost_usd = 0.01;
    call.latency_ms = 900;
    call.status = i == 2 ? "http_429" : "ok";
    ASSERT_TRUE(store.record_llm_call(call).ok());
  }
  auto totals = store.run_totals(*run);
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(totals->calls, 3);
  EXPECT_EQ(totals->failed_calls, 1);
  EXPECT_EQ(totals->input_tokens, 3000);
  EXPECT_EQ(totals->output_tokens, 600);
  EXPECT_NEAR(totals->cost_usd, 0.03, 1e-12);
  auto latest = store.latest_run();
  ASSERT_TRUE(latest.ok() && *latest);
  EXPECT_EQ((*latest)->status, RunStatus::kRunning);
  EXPECT_TRUE((*latest)->finished_at.empty());
  ASSERT_TRUE(store.finish_run(*run, RunStatus::kFinished).ok());
  EXPECT_EQ((*store.latest_run())->status, RunStatus::kFinished);
  EXPECT_FALSE((*store.latest_run())->finished_at.empty());
  EXPECT_FALSE(store.finish_run(999, RunStatus::kFinished).ok());
}

TEST(StoreTest, LlmCallErrorsNeverKeepAKey) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  LlmCallRecord call;
  call.status = "http_401";
  call.error = "401: invalid key sk-proj-ABCDEF1234567890 (Authorization: Bearer abcdefghijklmnop)";
  auto id = store.record_llm_call(call);
  ASSERT_TRUE(id.ok());
  auto stored = *store.database().query_text("SELECT error FROM llm_calls");
  EXPECT_EQ(stored.find("sk-proj"), std::string::npos) << stored;
  EXPECT_EQ(stored.find("abcdefghijklmnop"), std::string::npos) << stored;
  EXPECT_NE(stored.find("[redacted]"), std::string::npos) << stored;
  EXPECT_EQ(scrub_secrets("api_key=0123456789abcdef&x=1"), "api_key=[redacted]&x=1");
  EXPECT_EQ(scrub_secrets("timeout after 30 s"), "timeout after 30 s");
}

TEST(StoreTest, DuplicatePairsAreMerged) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t a = add_kernel(store, "axpy", kernel_source("axpy", "a"));
  int64_t b = add_kernel(store, "axpy", kernel_source("axpy", "b"), a);
  PairRecord pair;
  pair.task = "axpy";
  pair.slow_kernel_id = a;
  pair.fast_kernel_id = b;
  pair.speedup = 1.5;
  pair.gpu_model = "H100";
  pair.tags = {"elementwise"};
  pair.retrieved_count = 4;
  pair.improved_count = 1;
  auto first = store.add_pair(pair);
  ASSERT_TRUE(first.ok()) << first.error();
  pair.summary = "float4 loads halve the instructions";
  pair.tags = {"elementwise", "vectorize"};
  pair.retrieved_count = 2;
  pair.improved_count = 2;
  auto second = store.add_pair(pair);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM pairs"), 1);
  auto merged = *store.pair(*first);
  EXPECT_EQ(merged->summary, "float4 loads halve the instructions");
  EXPECT_EQ(merged->tags, (std::vector<std::string>{"elementwise", "vectorize"}));
  EXPECT_EQ(merged->retrieved_count, 4);
  EXPECT_EQ(merged->improved_count, 2);
  // The merged summary is searchable.
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM pair_fts WHERE pair_fts MATCH"
                                          " 'float4'"),
            1);
  // The same kernels on another GPU are another pair.
  pair.gpu_model = "A100";
  EXPECT_NE(*store.add_pair(pair), *first);
}

TEST(StoreTest, PairValidation) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t a = add_kernel(store, "axpy", kernel_source("axpy", "a"));
  PairRecord pair;
  pair.task = "axpy";
  pair.slow_kernel_id = a;
  pair.fast_kernel_id = a;
  pair.speedup = 2;
  pair.gpu_model = "H100";
  EXPECT_FALSE(store.add_pair(pair).ok());
  pair.fast_kernel_id = 12345;
  auto missing = store.add_pair(pair);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("12345"), std::string::npos) << missing.error();
  int64_t b = add_kernel(store, "axpy", kernel_source("axpy", "b"));
  pair.fast_kernel_id = b;
  pair.speedup = 0;
  EXPECT_FALSE(store.add_pair(pair).ok());
}

TEST(StoreTest, LineageIsTheBranchBelowTheRoot) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t base = add_kernel(store, "axpy", kernel_source("axpy", "baseline"));
  int64_t b = add_kernel(store, "axpy", kernel_source("axpy", "b"), base);
  int64_t c = add_kernel(store, "axpy", kernel_source("axpy", "c"), b);
  int64_t e = add_kernel(store, "axpy", kernel_source("axpy", "e"), base);
  int64_t ab = add_pair(store, "axpy", base, b, 1.3, "step one", {"elementwise"});
  int64_t bc = add_pair(store, "axpy", b, c, 1.2, "step two", {"elementwise"});
  int64_t ae = add_pair(store, "axpy", base, e, 1.1, "sibling", {"elementwise"});
  EXPECT_EQ((*store.pair(ab))->lineage_root_id, b);
  EXPECT_EQ((*store.pair(bc))->lineage_root_id, b);
  EXPECT_EQ((*store.pair(ae))->lineage_root_id, e);
  // A slowdown is a negative pair.
  int64_t cb = add_pair(store, "axpy", c, e, 0.8, "worse", {"elementwise"});
  EXPECT_TRUE((*store.pair(cb))->is_negative);
  EXPECT_FALSE((*store.pair(ab))->is_negative);
}

TEST(StoreTest, UsefulnessCounters) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t a = add_kernel(store, "axpy", kernel_source("axpy", "a"));
  int64_t b = add_kernel(store, "axpy", kernel_source("axpy", "b"), a);
  int64_t p = add_pair(store, "axpy", a, b, 1.5, "x", {"elementwise"});
  ASSERT_TRUE(store.mark_retrieved({p, p}).ok());
  ASSERT_TRUE(store.record_outcome(p, true).ok());
  ASSERT_TRUE(store.record_outcome(p, false).ok());
  auto pair = *store.pair(p);
  EXPECT_EQ(pair->retrieved_count, 2);
  EXPECT_EQ(pair->improved_count, 1);
  // An unknown id fails and counts nothing, not even for the known ids before it.
  auto bad = store.mark_retrieved({p, 999});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("999"), std::string::npos);
  EXPECT_EQ((*store.pair(p))->retrieved_count, 2);
  EXPECT_FALSE(store.record_outcome(999, true).ok());
}

TEST(StoreTest, WinsFilters) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  add_task(store, "softmax", {"reduction"});
  int64_t a = add_kernel(store, "axpy", kernel_source("axpy", "a"));
  int64_t b = add_kernel(store, "axpy", kernel_source("axpy", "b"), a);
  int64_t s1 = add_kernel(store, "softmax", kernel_source("softmax", "s1"));
  int64_t s2 = add_kernel(store, "softmax", kernel_source("softmax", "s2"), s1);
  int64_t axpy_pair = add_pair(store, "axpy", a, b, 1.3, "x", {"elementwise"});
  int64_t softmax_pair = add_pair(store, "softmax", s1, s2, 2.5, "y", {"reduction"}, "sm_80");
  add_pair(store, "softmax", s2, s1, 0.4, "negative", {"reduction"});
  auto all = store.wins({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);  // negatives are not wins
  EXPECT_EQ((*all)[0].id, softmax_pair);
  EXPECT_EQ((*all)[1].id, axpy_pair);
  WinsFilter filter;
  filter.task = "axpy";
  EXPECT_EQ(store.wins(filter)->size(), 1u);
  filter = {};
  filter.min_speedup = 2;
  EXPECT_EQ(store.wins(filter)->size(), 1u);
  filter = {};
  filter.gpu = "sm_80";
  EXPECT_EQ(store.wins(filter)->front().id, softmax_pair);
  filter.gpu = "h100";
  EXPECT_EQ(store.wins(filter)->size(), 2u);
  filter = {};
  filter.since = "2026-12-01";
  EXPECT_TRUE(store.wins(filter)->empty());
  filter.since = "2026-11-22";
  EXPECT_EQ(store.wins(filter)->size(), 2u);
}

TEST(StoreTest, SearchFindsPairsAndKernelsByWordsAndCode) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "softmax", {"reduction"});
  int64_t a = add_kernel(store, "softmax", kernel_source("softmax_rows", "partial tree"));
  int64_t b = add_kernel(
      store, "softmax", kernel_source("softmax_rows", "v = __shfl_xor_sync(0xffffffff, v, o);"), a);
  add_pair(store, "softmax", a, b, 2.0, "warp shuffles replace the shared-memory tree",
           {"reduction", "warp-shuffle"});
  auto hits = store.search("shuffles");
  ASSERT_TRUE(hits.ok()) << hits.error();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].kind, "pair");
  hits = store.search("__shfl_xor_sync");
  ASSERT_TRUE(hits.ok()) << hits.error();
  ASSERT_EQ(hits->size(), 2u);  // the pair (its fast kernel's code) and the kernel itself
  EXPECT_EQ((*hits)[1].kind, "kernel");
  EXPECT_EQ((*hits)[1].id, b);
  EXPECT_EQ(store.search("shfl")->size(), 2u);  // a part of an identifier
  EXPECT_TRUE(store.search("tensor cores")->empty());
  EXPECT_TRUE(store.search("\"OR(")->empty());  // query syntax is not passed through
}

TEST(StoreTest, StatsCountByTaskVerdictAndGpu) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  add_task(store, "axpy", {"elementwise"});
  int64_t a = add_kernel(store, "axpy", kernel_source("axpy", "a"));
  ASSERT_TRUE(store.add_evaluation(evaluation(a, "ok", 300)).ok());
  ASSERT_TRUE(store.add_evaluation(evaluation(a, "incorrect", 0)).ok());
  ASSERT_TRUE(store.add_evaluation(evaluation(a, "ok", 280, "NVIDIA A100")).ok());
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->tasks, 1);
  EXPECT_EQ(stats->kernels, 1);
  EXPECT_EQ(stats->evaluations, 3);
  EXPECT_EQ(stats->evaluations_by_verdict.front(), (std::pair<std::string, int64_t>{"ok", 2}));
  EXPECT_EQ(stats->evaluations_by_gpu.front(),
            (std::pair<std::string, int64_t>{"NVIDIA H100 80GB HBM3", 2}));
  EXPECT_EQ(stats->evaluations_by_task.front(), (std::pair<std::string, int64_t>{"axpy", 3}));
  EXPECT_GT(stats->file_bytes, 0);
  EXPECT_EQ(stats->schema_version, kSchemaVersion);
}

}  // namespace
}  // namespace kopt::memory
