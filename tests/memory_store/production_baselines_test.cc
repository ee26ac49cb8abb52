// Production baselines (production_baselines.h): the migration to schema version 6 that adds
// their table to a version-5 file, the newest row per name as the current one, fastest first,
// the spec filter, and rows the store refuses.
#include "memory_store/production_baselines.h"

#include <gtest/gtest.h>

#include "memory_store/memory_store.h"
#include "memory_store/schema.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

ProductionBaselineRecord row(const std::string& task, const std::string& name, double us,
                             const std::string& gpu = kH100, const std::string& spec = "spec-1") {
  ProductionBaselineRecord r;
  r.task = task;
  r.gpu_model = gpu;
  r.name = name;
  r.median_us = us;
  r.noise = 0.004;
  r.samples = 40;
  r.device_json = R"({"name":"NVIDIA H100 80GB HBM3","cc":"9.0"})";
  r.library_versions_json = R"({"cublasLt":"13.0.2"})";
  r.spec_sha256 = spec;
  r.shape = "m=4096 n=4096 k=4096";
  r.detail = "algorithm 0 of 8";
  return r;
}

TEST(ProductionBaselinesTest, MigrationToVersion6AddsTheTableAndKeepsWhatWasThere) {
  TempDir dir;
  std::filesystem::path path = dir / "v5.db";
  {
    OpenOptions options;
    options.target_version = 5;
    auto store = MemoryStore::open(path, options);
    ASSERT_TRUE(store.ok()) << store.error();
    EXPECT_FALSE(store->database().has_table("production_baselines"));
    add_task(*store, "sgemm", {"gemm"});
  }
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), kSchemaVersion);  // 6 and every later step
  EXPECT_TRUE(db.has_table("production_baselines"));
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM tasks WHERE name = 'sgemm'"), 1);
  // Older code never names the new table: version-4 code may still use the file.
  EXPECT_EQ(*compatible_version(db), 4);
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "cublaslt_heuristic", 800.0)));
}

TEST(ProductionBaselinesTest, EveryFieldIsKept) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto id = add_production_baseline(store.database(), row("sgemm", "cublaslt_autotuned", 760.5));
  ASSERT_TRUE(id) << id.error();
  auto rows = current_production_baselines(store.database(), "sgemm", kH100);
  ASSERT_TRUE(rows) << rows.error();
  ASSERT_EQ(rows->size(), 1u);
  const auto& r = rows->front();
  EXPECT_EQ(r.id, *id);
  EXPECT_EQ(r.task, "sgemm");
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.name, "cublaslt_autotuned");
  EXPECT_DOUBLE_EQ(r.median_us, 760.5);
  EXPECT_DOUBLE_EQ(r.noise, 0.004);
  EXPECT_EQ(r.samples, 40);
  EXPECT_EQ(r.device_json, R"({"name":"NVIDIA H100 80GB HBM3","cc":"9.0"})");
  EXPECT_EQ(r.library_versions_json, R"({"cublasLt":"13.0.2"})");
  EXPECT_EQ(r.spec_sha256, "spec-1");
  EXPECT_EQ(r.shape, "m=4096 n=4096 k=4096");
  EXPECT_EQ(r.detail, "algorithm 0 of 8");
  EXPECT_FALSE(r.created_at.empty());
}

TEST(ProductionBaselinesTest, TheNewestRowPerNameIsCurrentAndTheFastestIsBest) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto& db = store.database();
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "torch_eager", 900.0)));
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "cublaslt_autotuned", 700.0)));
  // Re-measured after a driver update: slower now, and the new row is the current one.
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "cublaslt_autotuned", 780.0)));
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "torch_compile", 850.0)));
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "torch_eager", 100.0, "NVIDIA A100")));
  ASSERT_TRUE(add_production_baseline(db, row("softmax", "torch_eager", 50.0)));

  auto rows = current_production_baselines(db, "sgemm", kH100);
  ASSERT_TRUE(rows) << rows.error();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].name, "cublaslt_autotuned");
  EXPECT_DOUBLE_EQ((*rows)[0].median_us, 780.0);
  EXPECT_EQ((*rows)[1].name, "torch_compile");
  EXPECT_EQ((*rows)[2].name, "torch_eager");

  auto best = best_production_baseline(db, "sgemm", kH100);
  ASSERT_TRUE(best) << best.error();
  ASSERT_TRUE(best->has_value());
  EXPECT_EQ((*best)->name, "cublaslt_autotuned");
  auto none = best_production_baseline(db, "transpose", kH100);
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(none->has_value());
  auto other_gpu = best_production_baseline(db, "sgemm", "NVIDIA A100");
  ASSERT_TRUE(other_gpu && other_gpu->has_value());
  EXPECT_DOUBLE_EQ((*other_gpu)->median_us, 100.0);

  auto all = all_production_baselines(db);
  ASSERT_TRUE(all) << all.error();
  EXPECT_EQ(all->size(), 5u);  // 3 sgemm on the H100, 1 on the A100, 1 softmax
}

TEST(ProductionBaselinesTest, ASpecFilterKeepsOnlyRowsOfThatTaskJson) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto& db = store.database();
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "torch_eager", 900.0, kH100, "old")));
  ASSERT_TRUE(add_production_baseline(db, row("sgemm", "torch_compile", 950.0, kH100, "new")));
  auto rows = current_production_baselines(db, "sgemm", kH100, "new");
  ASSERT_TRUE(rows) << rows.error();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().name, "torch_compile");
  EXPECT_EQ(current_production_baselines(db, "sgemm", kH100)->size(), 2u);
}

TEST(ProductionBaselinesTest, RowsWithoutAPositiveTimeOrANameAreRefused) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto& db = store.database();
  EXPECT_FALSE(add_production_baseline(db, row("sgemm", "torch_eager", 0.0)));
  EXPECT_FALSE(add_production_baseline(db, row("sgemm", "", 10.0)));
  EXPECT_FALSE(add_production_baseline(db, row("sgemm", "torch_eager", 10.0, "")));
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM production_baselines"), 0);
}

// A library that did not import on the GPU machine is stored as an absence (median 0, "not
// installed" in its detail): never a time to compare with, and said plainly until a later
// measurement of that name replaces it.
TEST(ProductionBaselinesTest, ALibraryNotInstalledIsNoTimeAndIsNamedUntilMeasured) {
  TempDir dir;
  MemoryStore store = open_store(dir / "m.db");
  auto& db = store.database();
  ASSERT_TRUE(add_production_baseline(db, row("paged_decode_attention", "torch_compile", 1650.0)));
  ProductionBaselineRecord absent = row("paged_decode_attention", "vllm", 0.0);
  absent.detail = "not installed: the baseline is the PyTorch composition (vllm does not import)";
  ASSERT_TRUE(add_production_baseline(db, absent));
  absent.name = "flashinfer";
  ASSERT_TRUE(add_production_baseline(db, absent));
  auto best = best_production_baseline(db, "paged_decode_attention", kH100);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_EQ((*best)->name, "torch_compile");  // an absence of 0 us is never the fastest
  auto current = current_production_baselines(db, "paged_decode_attention", kH100);
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->size(), 1u);
  auto missing = libraries_not_installed(db, "paged_decode_attention", kH100);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, (std::vector<std::string>{"flashinfer", "vllm"}));
  EXPECT_TRUE(libraries_not_installed(db, "paged_decode_attention", "NVIDIA A100")->empty());
  // Installed later: the measurement is current, the absence is history.
  ASSERT_TRUE(add_production_baseline(db, row("paged_decode_attention", "vllm", 120.0)));
  EXPECT_EQ(*libraries_not_installed(db, "paged_decode_attention", kH100),
            (std::vector<std::string>{"flashinfer"}));
  EXPECT_EQ((*best_production_baseline(db, "paged_decode_attention", kH100))->name, "vllm");
  // A zero time that is no absence stays refused.
  ProductionBaselineRecord zero = row("paged_decode_attention", "sdpa", 0.0);
  EXPECT_FALSE(add_production_baseline(db, zero));
}

}  // namespace
}  // namespace kopt::memory
