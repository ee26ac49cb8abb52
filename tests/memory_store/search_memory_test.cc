// What issue 36 adds to the memory, on real SQLite files: the example_draws table of schema
// version 7 (the randomised example slot with its propensity) and its migration, the random slot
// itself, and technique cards computed from pairs, profiles and plans.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "memory_store/example_draws.h"
#include "memory_store/plan_store.h"
#include "memory_store/retrieval.h"
#include "memory_store/schema.h"
#include "memory_store/technique_cards.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

TEST(ExampleDraws, MigrationToVersion7AddsTheTableAndKeepsWhatWasThere) {
  TempDir dir;
  std::filesystem::path path = dir / "v6.db";
  int64_t pair = 0;
  {
    OpenOptions options;
    options.target_version = 6;
    auto store = MemoryStore::open(path, options);
    ASSERT_TRUE(store.ok()) << store.error();
    EXPECT_FALSE(store->database().has_table("example_draws"));
    add_task(*store, "axpy", {"elementwise"});
    int64_t slow = add_kernel(*store, "axpy", kernel_source("axpy", "scalar loads"));
    int64_t fast = add_kernel(*store, "axpy", kernel_source("axpy", "float4 loads"), slow);
    pair = add_pair(*store, "axpy", slow, fast, 1.4, "float4 loads", {"elementwise"});
  }
  // `kopt memory upgrade` and every writer open it like this: one step, in a transaction.
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), 7);
  EXPECT_EQ(*compatible_version(db), 4);  // older code never names the table
  EXPECT_TRUE(db.has_table("example_draws"));
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM pairs"), 1);  // nothing stored is lost
  ExampleDrawRecord draw;
  draw.task = "axpy";
  draw.agent = "planner";
  draw.pair_id = pair;
  draw.propensity = 0.25;
  draw.candidates = 4;
  draw.slot = 2;
  draw.shown = {7, 8, pair};
  draw.plan_ids = {11, 12};
  ASSERT_TRUE(add_example_draw(db, draw).ok());
  auto draws = list_example_draws(db, std::nullopt);
  ASSERT_TRUE(draws.ok()) << draws.error();
  ASSERT_EQ(draws->size(), 1u);
  const ExampleDrawRecord& back = draws->front();
  EXPECT_EQ(back.pair_id, pair);
  EXPECT_DOUBLE_EQ(back.propensity, 0.25);
  EXPECT_EQ(back.candidates, 4);
  EXPECT_EQ(back.slot, 2);
  EXPECT_EQ(back.shown, (std::vector<int64_t>{7, 8, pair}));
  EXPECT_EQ(back.plan_ids, (std::vector<int64_t>{11, 12}));
  EXPECT_FALSE(back.created_at.empty());
}

// Six layernorm steps from one slow kernel, each teaching another word of the same family.
class RandomSlot : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(open_store(dir_ / "m.db"));
    add_task(*store_, "layernorm", {"normalization"});
    int64_t root = add_kernel(*store_, "layernorm", kernel_source("ln", "scalar loop"));
    const char* steps[] = {"float4 vectorized loads", "__shfl_xor_sync warp shuffle",
                           "cp.async pipeline",       "#pragma unroll unrolling",
                           "__expf fast math",        "register resident rows"};
    for (const char* step : steps) {
      int64_t fast = add_kernel(*store_, "layernorm", kernel_source("ln", step), root);
      ids_.insert(add_pair(*store_, "layernorm", root, fast, 1.5, step, {"normalization"}));
    }
  }
  RetrievalQuery query(std::function<size_t(size_t)> draw) const {
    RetrievalQuery q;
    q.task = "layernorm";
    q.family_tags = {"normalization"};
    q.kernel_source = kernel_source("ln", "scalar loop");
    q.k = 3;
    q.include_negatives = false;
    q.draw_index = std::move(draw);
    return q;
  }
  TempDir dir_;
  std::optional<MemoryStore> store_;
  std::set<int64_t> ids_;
};

TEST_F(RandomSlot, OneSlotIsDrawnUniformlyAndCarriesItsPropensity) {
  auto plain = store_->retrieve(query({}));
  ASSERT_TRUE(plain.ok()) << plain.error();
  ASSERT_EQ(plain->size(), 3u);
  for (const auto& p : *plain) EXPECT_EQ(p.propensity, 0);  // no draw without draw_index
  // Every index of the pool reaches a different pair: the slot is filled from all the eligible
  // candidates (6 pairs, the first two slots keep theirs: 4 to draw from).
  std::set<int64_t> drawn;
  for (size_t i = 0; i < 4; ++i) {
    size_t pool = 0;
    auto shown = store_->retrieve(query([&](size_t n) {
      pool = n;
      return i;
    }));
    ASSERT_TRUE(shown.ok()) << shown.error();
    ASSERT_EQ(shown->size(), 3u);
    EXPECT_EQ(pool, 4u);
    EXPECT_EQ((*shown)[0].pair.id, (*plain)[0].pair.id);
    EXPECT_EQ((*shown)[1].pair.id, (*plain)[1].pair.id);
    const RetrievedPair& slot = (*shown)[2];
    EXPECT_DOUBLE_EQ(slot.propensity, 0.25);
    EXPECT_EQ(slot.draw_candidates, 4);
    EXPECT_EQ(slot.pair.id == (*plain)[0].pair.id || slot.pair.id == (*plain)[1].pair.id, false);
    drawn.insert(slot.pair.id);
  }
  EXPECT_EQ(drawn.size(), 4u);
}

TEST_F(RandomSlot, WithFewerExamplesThanSlotsTheDrawAddsOne) {
  RetrievalQuery q = query([](size_t) { return 0; });
  q.k = 10;  // more slots than one-per-technique examples fill
  auto shown = store_->retrieve(q);
  ASSERT_TRUE(shown.ok()) << shown.error();
  EXPECT_EQ(shown->size(), 6u);  // all six shown: nothing is left to draw, nothing changes
  for (const auto& p : *shown) EXPECT_EQ(p.propensity, 0);
  // A second float4 step of layernorm: one example per (task, technique) hides it, the draw
  // may show it, in a slot of its own.
  int64_t root = add_kernel(*store_, "layernorm", kernel_source("ln0", "scalar loop two"));
  int64_t fast = add_kernel(*store_, "layernorm", kernel_source("ln0", "float4 loads twice"), root);
  int64_t twin = add_pair(*store_, "layernorm", root, fast, 1.2, "float4 loads", {"normalization"});
  shown = store_->retrieve(q);
  ASSERT_TRUE(shown.ok()) << shown.error();
  ASSERT_EQ(shown->size(), 7u);
  EXPECT_EQ(shown->back().pair.id, twin);
  EXPECT_DOUBLE_EQ(shown->back().propensity, 1.0);
  EXPECT_EQ(shown->back().draw_candidates, 1);
}

// Writes an evaluation with a profile whose class the test's classifier reads back.
void add_profiled(MemoryStore& store, int64_t kernel, const std::string& cls) {
  nlohmann::json profile = {{"class", cls}};
  auto statement = store.database().cached(
      "INSERT INTO evaluations(kernel_id, task_id, gpu_model, verdict, median_us, created_at,"
      " profile_json) SELECT ?1, task_id, 'H100', 'ok', 10, 'now', ?2 FROM kernels WHERE id = ?1");
  statement->bind_all(kernel, profile.dump());
  ASSERT_TRUE(statement->run().ok());
}

PlanRecord plan(const std::string& task, const std::string& technique, const std::string& detail) {
  PlanRecord p;
  p.task = task;
  p.title = technique;
  p.detail = detail;
  p.technique = technique;
  return p;
}

TEST(TechniqueCards, MergePairsProfilesAndPlansPerTechnique) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto& db = store.database();
  add_task(store, "softmax", {"reduction"});
  add_task(store, "sgemm", {"matmul"});
  int64_t s0 = add_kernel(store, "softmax", kernel_source("softmax", "scalar loads"));
  int64_t s1 =
      add_kernel(store, "softmax", kernel_source("softmax", "float4 vectorized loads"), s0);
  int64_t s2 = add_kernel(store, "softmax", kernel_source("softmax", "float4 loads again"), s0);
  add_pair(store, "softmax", s0, s1, 1.5, "float4 loads", {"reduction"});
  add_pair(store, "softmax", s0, s2, 0.8, "float4 loads with a misaligned tail", {"reduction"});
  add_profiled(store, s0, "memory_latency");
  add_profiled(store, s1, "dram_bandwidth");
  int64_t g0 = add_kernel(store, "sgemm", kernel_source("sgemm", "naive loops"));
  int64_t g1 = add_kernel(store, "sgemm", kernel_source("sgemm", "wmma tensor core tiles"), g0);
  add_pair(store, "sgemm", g0, g1, 6.0, "tensor core tiles", {"matmul"});
  auto ok = add_plan(db, plan("softmax", "vector_loads", "Use float4; expected 1.3x."));
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(finish_plan(db, *ok, "verified, 1.40x its parent", {s1}).ok());
  auto bad = add_plan(db, plan("softmax", "vector_loads", "float4 loads, expect about 1.2x"));
  ASSERT_TRUE(bad.ok());
  ASSERT_TRUE(finish_plan(db, *bad, "out_of_bounds: float4 past the end", {}).ok());
  ASSERT_TRUE(add_plan(db, plan("softmax", "vector_loads", "never developed")).ok());

  CardQuery query;
  query.task = "softmax";
  query.bottleneck_of_profile = [](const std::string& json) {
    return nlohmann::json::parse(json).value("class", "unknown");
  };
  auto cards = technique_cards(db, query);
  ASSERT_TRUE(cards.ok()) << cards.error();
  ASSERT_EQ(cards->size(), 1u);  // sgemm's tensor cores are another family's
  const TechniqueCard& card = cards->front();
  EXPECT_EQ(card.technique, "vector_loads");
  EXPECT_EQ(card.pairs, 1);
  EXPECT_EQ(card.plans, 2);  // the queued plan is neither
  EXPECT_EQ(card.plans_verified, 1);
  EXPECT_EQ(card.plans_failed, 1);
  EXPECT_EQ(card.bottlenecks.at("memory_latency -> dram_bandwidth"), 1);
  ASSERT_EQ(card.applies_when.size(), 1u);
  EXPECT_EQ(card.applies_when[0], "softmax (reduction): best 1.50x, median 1.50x over 1 pair");
  ASSERT_EQ(card.pitfalls.size(), 2u) << describe_card(card);
  EXPECT_NE(card.pitfalls[0].find("made softmax slower (0.80x)"), std::string::npos)
      << describe_card(card);
  EXPECT_NE(card.pitfalls[1].find("out_of_bounds: float4 past the end"), std::string::npos)
      << describe_card(card);
  EXPECT_EQ(card.expected, (std::vector<double>{1.2, 1.3}));  // newest plan first
  EXPECT_DOUBLE_EQ(median_of(card.measured), 1.45);           // 1.5 (pair), 1.4 (plan)
  std::string text = describe_card(card);
  EXPECT_NE(text.find("expected median 1.25x (2 plans), measured median 1.45x (2)"),
            std::string::npos)
      << text;
  // Without a task every technique of the memory has its card.
  auto all = technique_cards(db, CardQuery{});
  ASSERT_TRUE(all.ok()) << all.error();
  std::set<std::string> names;
  for (const auto& c : *all) names.insert(c.technique);
  EXPECT_TRUE(names.count("tensor_cores")) << names.size();
}

TEST(TechniqueCards, TheExpectedGainIsReadFromThePlansText) {
  EXPECT_DOUBLE_EQ(expected_speedup_in("Use float4. Expected 1.3x."), 1.3);
  EXPECT_DOUBLE_EQ(expected_speedup_in("we expect about 2x from this"), 2.0);
  EXPECT_DOUBLE_EQ(expected_speedup_in("float4 loads (4x fewer instructions)"), 0);
}

}  // namespace
}  // namespace kopt::memory
