// `kopt memory ...` through the real kopt binary, on a real database file: every action, and
// bad input (missing database, unknown task, bad ID, bad file) failing clearly without losing data.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/files.h"
#include "common/subprocess.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt(std::vector<std::string> args) {
  return run_kopt(KOPT_BINARY, std::move(args), std::chrono::seconds(60));
}

class MemoryCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "memory.db").string();
    auto store = open_store(db_);
    sample_ = fill_sample_memory(store);
  }

  TempDir dir_;
  std::string db_;
  SampleMemory sample_;
};

TEST_F(MemoryCliTest, WinsTableAndJson) {
  auto out = kopt({"memory", "wins", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "warp shuffles replace")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "2.00x")) << out.stdout_text;
  EXPECT_FALSE(contains(out.stdout_text, "halves the speed"));  // negatives are not wins
  out = kopt({"memory", "wins", "--db", db_, "--task", "axpy", "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto json = nlohmann::json::parse(out.stdout_text);
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["id"], sample_.axpy_pair);
  out = kopt({"memory", "wins", "--db", db_, "--min-speedup", "1.5", "--json"});
  EXPECT_EQ(nlohmann::json::parse(out.stdout_text).size(), 1u);
  out = kopt({"memory", "wins", "--db", db_, "--since", "2030-01-01"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_TRUE(contains(out.stdout_text, "no wins match"));
  out = kopt({"memory", "wins", "--db", db_, "--gpu", "A100", "--json"});
  EXPECT_EQ(nlohmann::json::parse(out.stdout_text).size(), 0u);
}

// What memory knows per technique, merged: the sample's float4 axpy pair is a vector_loads card
// that applies to axpy (technique_cards.h); --task narrows, --json is machine-readable.
TEST_F(MemoryCliTest, CardsShowWhatMemoryKnowsPerTechnique) {
  auto out = kopt({"memory", "cards", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "vector_loads: 1 pair taught it")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "applies when: axpy (elementwise): best 1.11x"))
      << out.stdout_text;
  out = kopt({"memory", "cards", "--db", db_, "--task", "axpy", "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto json = nlohmann::json::parse(out.stdout_text);
  ASSERT_TRUE(json.is_array());
  std::set<std::string> names;
  for (const auto& card : json) names.insert(card["technique"].get<std::string>());
  EXPECT_TRUE(names.count("vector_loads")) << out.stdout_text;
  EXPECT_FALSE(names.count("warp_shuffle")) << "softmax's shuffles are another family's";
  out = kopt({"memory", "cards", "--db", db_, "--limit", "3"});
  EXPECT_EQ(out.exit_code, 2) << "cards takes --task and --json only";
}

TEST_F(MemoryCliTest, WinsBadInput) {
  auto out = kopt({"memory", "wins", "--db", db_, "--task", "axpi"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "unknown task 'axpi'")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "did you mean 'axpy'")) << out.stderr_text;
  out = kopt({"memory", "wins", "--db", db_, "--since", "yesterday"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "--since 'yesterday' is not a date")) << out.stderr_text;
  out = kopt({"memory", "wins", "--db", db_, "--min-speedup", "fast"});
  EXPECT_EQ(out.exit_code, 2);
}

TEST_F(MemoryCliTest, EveryReadCommandRefusesAMissingDatabaseAndCreatesNone) {
  std::string missing = (dir_ / "nowhere" / "memory.db").string();
  std::vector<std::vector<std::string>> commands = {
      {"memory", "wins"},
      {"memory", "search", "float4"},
      {"memory", "show", "1"},
      {"memory", "stats"},
      {"memory", "prune", "--dry-run"},
      {"memory", "export", "--jsonl", (dir_ / "out.jsonl").string()},
      {"export", "--out", (dir_ / "kernels").string()}};
  for (auto args : commands) {
    args.push_back("--db");
    args.push_back(missing);
    auto out = kopt(args);
    EXPECT_EQ(out.exit_code, 1) << args[1];
    EXPECT_TRUE(contains(out.stderr_text, missing)) << out.stderr_text;
    EXPECT_TRUE(contains(out.stderr_text, "no memory database")) << out.stderr_text;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "nowhere"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "kernels"));
}

TEST_F(MemoryCliTest, DatabaseFromTheEnvironment) {
  ::setenv("KOPT_DB", db_.c_str(), 1);
  auto out = kopt({"memory", "stats"});
  ::unsetenv("KOPT_DB");
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, db_)) << out.stdout_text;
}

TEST_F(MemoryCliTest, SearchFindsSummariesAndCode) {
  auto out = kopt({"memory", "search", "--db", db_, "shuffles"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "warp shuffles replace")) << out.stdout_text;
  out = kopt({"memory", "search", "--db", db_, "--json", "float4"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto hits = nlohmann::json::parse(out.stdout_text);
  bool kernel_hit = false;
  for (const auto& h : hits)
    kernel_hit = kernel_hit || (h["kind"] == "kernel" && h["id"] == sample_.axpy_fast);
  EXPECT_TRUE(kernel_hit) << out.stdout_text;
  out = kopt({"memory", "search", "--db", db_, "tensor", "cores"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_TRUE(contains(out.stdout_text, "nothing matches"));
  out = kopt({"memory", "search", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
}

TEST_F(MemoryCliTest, ShowPrintsNumbersSummaryAndDiff) {
  auto out = kopt({"memory", "show", std::to_string(sample_.axpy_pair), "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  const std::string& text = out.stdout_text;
  EXPECT_TRUE(contains(text, "1.107x faster on NVIDIA H100 80GB HBM3 (sm_90)")) << text;
  EXPECT_TRUE(contains(text, "float4 loads cut the load instructions by four")) << text;
  EXPECT_TRUE(contains(text, "--- kernel " + std::to_string(sample_.axpy_baseline) + " (slow)"));
  EXPECT_TRUE(contains(text, "+++ kernel " + std::to_string(sample_.axpy_fast) + " (fast)"));
  EXPECT_TRUE(contains(text, "\n-  if (i < n) out[i] = alpha * x[i] + y[i];\n")) << text;
  EXPECT_TRUE(contains(text, "\n+    float4 a = *reinterpret_cast<const float4*>(x + i);\n"));
  out = kopt({"memory", "show", "999", "--db", db_});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "no pair 999")) << out.stderr_text;
  out = kopt({"memory", "show", "first", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "expected one pair ID")) << out.stderr_text;
}

// Where each side's time went, from the newest profile of each kernel: only sides that were
// profiled get a line, and a memory without profiles shows none.
TEST_F(MemoryCliTest, ShowPrintsEachProfiledSidesHardwareCounters) {
  std::string pair = std::to_string(sample_.axpy_pair);
  auto out = kopt({"memory", "show", pair, "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_FALSE(contains(out.stdout_text, "side:")) << out.stdout_text;
  {
    auto store = open_store(db_);
    auto best = store.best_kernel("axpy", "NVIDIA H100 80GB HBM3");
    ASSERT_TRUE(best.ok() && *best) << (best.ok() ? "no best" : best.error());
    ASSERT_EQ((*best)->kernel_id, sample_.axpy_fast);
    EvaluationRecord e = **best;
    e.profile_json = R"({"kernels":1,"duration_us":301.5,"dram_read_bytes":536870912,
      "dram_write_bytes":268435456,"dram_percent":88.4,"l2_hit_percent":33.5,"l1_hit_percent":0,
      "sm_percent":12.0,"occupancy_percent":91.0,"tensor_percent":-1,"instructions":1.0e7,
      "shared_wavefronts":0,"bank_conflicts":0,"stalls":[{"reason":"long_scoreboard",
      "percent":90.2},{"reason":"wait","percent":3.1}],"passes":15,"profile_ms":540})";
    ASSERT_TRUE(store.add_evaluation(e).ok());
  }
  out = kopt({"memory", "show", pair, "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  const std::string& text = out.stdout_text;
  EXPECT_TRUE(contains(text,
                       "fast side: 301.50 us under the profiler; DRAM 88% of peak (805 MB), "
                       "L2 hit 34%, L1 hit 0%, SM throughput 12%, achieved occupancy 91%, "
                       "top stalls: long scoreboard 90%, wait 3.1% -> bound by DRAM "
                       "bandwidth\n"))
      << text;
  EXPECT_FALSE(contains(text, "slow side:")) << text;  // the baseline was never profiled
  // Before the diff, after the summary.
  EXPECT_LT(text.find("float4 loads cut"), text.find("fast side:"));
  EXPECT_LT(text.find("fast side:"), text.find("--- kernel "));
}

TEST_F(MemoryCliTest, StatsCounts) {
  auto out = kopt({"memory", "stats", "--db", db_, "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto stats = nlohmann::json::parse(out.stdout_text);
  EXPECT_EQ(stats["tasks"], 2);
  EXPECT_EQ(stats["kernels"], 4);
  EXPECT_EQ(stats["evaluations"], 5);
  EXPECT_EQ(stats["pairs"], 3);
  EXPECT_EQ(stats["negative_pairs"], 1);
  EXPECT_EQ(stats["evaluations_by_verdict"]["incorrect"], 1);
  EXPECT_EQ(stats["evaluations_by_gpu"]["NVIDIA H100 80GB HBM3"], 5);
  EXPECT_GT(stats["file_bytes"].get<int64_t>(), 0);
  out = kopt({"memory", "stats", "--db", db_});
  EXPECT_TRUE(contains(out.stdout_text, "2 tasks, 4 kernels, 5 evaluations, 3 pairs (1 negative)"))
      << out.stdout_text;
}

TEST_F(MemoryCliTest, ExportImportRoundTripDeduplicates) {
  std::string file = (dir_ / "shared.jsonl").string();
  auto out = kopt({"memory", "export", "--db", db_, "--jsonl", file});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "exported 2 tasks, 4 kernels, 5 evaluations, 3 pairs"));
  std::string other = (dir_ / "team" / "memory.db").string();  // import creates the database
  out = kopt({"memory", "import", "--db", other, "--jsonl", file});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "added 2 tasks, 4 kernels, 5 evaluations, 3 pairs"))
      << out.stdout_text;
  out = kopt({"memory", "import", "--db", other, "--jsonl", file});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "added 0 tasks, 0 kernels, 0 evaluations, 0 pairs"))
      << out.stdout_text;
  // The copy exports to the same bytes.
  std::string again = (dir_ / "again.jsonl").string();
  ASSERT_EQ(kopt({"memory", "export", "--db", other, "--jsonl", again}).exit_code, 0);
  EXPECT_EQ(*read_file(file), *read_file(again));
}

TEST_F(MemoryCliTest, ImportOfABadFileStoresNothing) {
  std::string file = (dir_ / "bad.jsonl").string();
  ASSERT_TRUE(write_file_atomic(file,
                                "{\"type\":\"header\",\"format\":1,\"kind\":\"kopt-memory\"}\n"
                                "{\"type\":\"tusk\"}\n")
                  .ok());
  std::string other = (dir_ / "other.db").string();
  auto out = kopt({"memory", "import", "--db", other, "--jsonl", file});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(
      contains(out.stderr_text, "bad.jsonl:2: $.type: unknown type 'tusk' (did you mean 'task'?)"))
      << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "nothing was imported"));
  out = kopt({"memory", "import", "--db", db_, "--jsonl", (dir_ / "missing.jsonl").string()});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "missing.jsonl: cannot open")) << out.stderr_text;
  out = kopt({"memory", "import", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "missing --jsonl FILE"));
  // The existing memory is intact.
  auto store = open_store(db_);
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM pairs"), 3);
}

TEST_F(MemoryCliTest, PruneDryRunThenPrune) {
  auto out = kopt({"memory", "prune", "--db", db_, "--dry-run", "--max-per-task", "0"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "would drop 2 pairs")) << out.stdout_text;
  EXPECT_EQ(*open_store(db_).database().query_int64("SELECT count(*) FROM pairs"), 3);
  out = kopt(
      {"memory", "prune", "--db", db_, "--max-per-task", "0", "--max-negatives-per-task", "0"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "dropped 3 pairs")) << out.stdout_text;
  EXPECT_EQ(*open_store(db_).database().query_int64("SELECT count(*) FROM pairs"), 0);
  out = kopt({"memory", "prune", "--db", db_, "--max-per-task", "-1"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "must not be negative")) << out.stderr_text;
}

TEST_F(MemoryCliTest, UnknownActionAndHelp) {
  auto out = kopt({"memory", "winz", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "unknown action 'winz' (did you mean 'wins'?)"))
      << out.stderr_text;
  out = kopt({"memory", "--help"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_TRUE(contains(out.stdout_text, "kopt memory prune [--dry-run]")) << out.stdout_text;
}

}  // namespace
}  // namespace kopt::memory
