// The schema and each migration; refusing databases this kopt must not touch.
#include "memory_store/schema.h"

#include <gtest/gtest.h>

#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using testing::TempDir;

sql::Database raw(const std::filesystem::path& path) {
  auto db = sql::Database::open(path, {});
  if (!db) throw std::runtime_error(db.error());
  return std::move(*db);
}

// A database at schema `version` holding one verified evaluation of 'axpy' on an H100, written
// with the columns every version knows.
void write_old_database(const std::filesystem::path& path, int version) {
  OpenOptions options;
  options.target_version = version;
  auto store = MemoryStore::open(path, options);
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE(store->database()
                  .execute(R"(
    INSERT INTO tasks(id, name, spec_hash, tags, spec_json, updated_at)
      VALUES (1, 'axpy', 'h', '[]', '{}', 'now');
    INSERT INTO kernels(id, sha256, source, task_id, created_at) VALUES (1, 'a', 'x', 1, 'now');
    INSERT INTO evaluations(kernel_id, task_id, gpu_model, verdict, median_us, created_at)
      VALUES (1, 1, 'H100', 'ok', 300.0, 'now');)")
                  .ok());
}

TEST(SchemaTest, FreshDatabaseIsAtTheCurrentVersion) {
  TempDir dir;
  auto store = MemoryStore::open(dir / "nested" / "folders" / "memory.db");
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), kSchemaVersion);
  EXPECT_EQ(*compatible_version(db), kCompatibleVersion);
  EXPECT_EQ(*db.query_int64("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(*db.query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*db.query_int64("PRAGMA foreign_keys"), 1);
  for (const char* table : {"meta", "tasks", "kernels", "evaluations", "pairs", "runs", "llm_calls",
                            "pair_fts", "kernel_fts"}) {
    EXPECT_TRUE(db.has_table(table)) << table;
  }
  EXPECT_EQ(*db.query_text("PRAGMA integrity_check"), "ok");
}

TEST(SchemaTest, MigrationToVersion1CreatesTheRecordTables) {
  TempDir dir;
  OpenOptions options;
  options.target_version = 1;
  auto store = MemoryStore::open(dir / "v1.db", options);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), 1);
  EXPECT_EQ(*compatible_version(db), 1);
  EXPECT_EQ(*db.query_int64("PRAGMA application_id"), kApplicationId);
  for (const char* table : {"tasks", "kernels", "evaluations", "pairs", "runs", "llm_calls"}) {
    EXPECT_TRUE(db.has_table(table)) << table;
  }
  EXPECT_FALSE(db.has_table("pair_fts"));
  // Foreign keys are enforced: a kernel of an unknown task is refused.
  EXPECT_FALSE(db.execute("INSERT INTO kernels(sha256, source, task_id, created_at)"
                          " VALUES ('x', 'y', 42, 'now')")
                   .ok());
  // The pair key is unique.
  ASSERT_TRUE(db.execute(R"(
    INSERT INTO tasks(id, name, spec_hash, spec_json, updated_at) VALUES (1, 't', 'h', '{}', 'now');
    INSERT INTO kernels(id, sha256, source, task_id, created_at) VALUES (1, 'a', 'a', 1, 'now');
    INSERT INTO kernels(id, sha256, source, task_id, created_at) VALUES (2, 'b', 'b', 1, 'now');
    INSERT INTO pairs(slow_kernel_id, fast_kernel_id, task_id, speedup, gpu_model,
                      lineage_root_id, created_at) VALUES (1, 2, 1, 2.0, 'H100', 2, 'now');)")
                  .ok());
  EXPECT_FALSE(db.execute("INSERT INTO pairs(slow_kernel_id, fast_kernel_id, task_id, speedup,"
                          " gpu_model, lineage_root_id, created_at)"
                          " VALUES (1, 2, 1, 3.0, 'H100', 2, 'now')")
                   .ok());
}

TEST(SchemaTest, MigrationToVersion2IndexesExistingRows) {
  TempDir dir;
  std::filesystem::path path = dir / "old.db";
  {
    OpenOptions options;
    options.target_version = 1;
    auto store = MemoryStore::open(path, options);
    ASSERT_TRUE(store.ok()) << store.error();
    // Rows written by a version-1 kopt (raw SQL: version-1 code had no index to maintain).
    ASSERT_TRUE(store->database()
                    .execute(R"(
      INSERT INTO tasks(id, name, spec_hash, tags, spec_json, updated_at)
        VALUES (1, 'softmax', 'h', '["reduction"]', '{}', 'now');
      INSERT INTO kernels(id, sha256, source, task_id, created_at)
        VALUES (1, 'a', 'float v = __expf(x);', 1, 'now');
      INSERT INTO kernels(id, sha256, source, task_id, parent_id, created_at)
        VALUES (2, 'b', 'float v = __shfl_xor_sync(m, x, 1);', 1, 1, 'now');
      INSERT INTO pairs(slow_kernel_id, fast_kernel_id, task_id, speedup, gpu_model, summary,
                        tags, lineage_root_id, created_at)
        VALUES (1, 2, 1, 2.0, 'H100', 'warp shuffle reduction', '["reduction"]', 2, 'now');)")
                    .ok());
  }
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*schema_version(db), kSchemaVersion);
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM pair_fts WHERE pair_fts MATCH 'shuffle'"), 1);
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM pair_fts WHERE pair_fts MATCH 'shfl'"), 1);
  EXPECT_EQ(
      *db.query_int64("SELECT count(*) FROM kernel_fts WHERE kernel_fts MATCH '__shfl_xor_sync'"),
      1);
  // The data written before the migration is untouched.
  auto pair = store->pair(1);
  ASSERT_TRUE(pair.ok() && *pair);
  EXPECT_EQ((*pair)->summary, "warp shuffle reduction");
}

TEST(SchemaTest, MigrationToVersion3AddsProfilesToEvaluations) {
  TempDir dir;
  std::filesystem::path path = dir / "v2.db";
  // An evaluation written by a version-2 kopt, which knew no profile column.
  write_old_database(path, 2);
  EXPECT_FALSE(raw(path).query_int64("SELECT count(profile_json) FROM evaluations"));
  {
    OpenOptions v3_options;
    v3_options.target_version = 3;
    auto v3 = MemoryStore::open(path, v3_options);
    ASSERT_TRUE(v3.ok()) << v3.error();
    EXPECT_EQ(*schema_version(v3->database()), 3);
    EXPECT_EQ(*v3->database().query_text("SELECT profile_json FROM evaluations"), "{}");
  }
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(*schema_version(store->database()), kSchemaVersion);
  auto best = store->best_kernel("axpy", "H100");
  ASSERT_TRUE(best.ok() && *best);
  EXPECT_EQ((*best)->profile_json, "{}");  // old rows: not profiled
  EXPECT_EQ((*best)->median_us, 300.0);
  EvaluationRecord e = **best;
  e.profile_json = R"({"dram_percent":90})";
  ASSERT_TRUE(store->add_evaluation(e).ok());
  EXPECT_EQ(*store->latest_profile(1), R"({"dram_percent":90})");
}

TEST(SchemaTest, ReopeningDoesNotMigrateAgain) {
  TempDir dir;
  {
    auto store = testing::open_store(dir / "m.db");
    testing::add_task(store, "axpy", {"elementwise"});
  }
  auto store = testing::open_store(dir / "m.db");
  EXPECT_EQ(*store.database().query_int64("SELECT count(*) FROM tasks"), 1);
  EXPECT_EQ(*schema_version(store.database()), kSchemaVersion);
}

TEST(SchemaTest, RefusesADatabaseFromANewerKopt) {
  TempDir dir;
  std::filesystem::path path = dir / "future.db";
  {
    auto store = testing::open_store(path);
    testing::add_task(store, "axpy", {"elementwise"});
  }
  {
    sql::Database db = raw(path);
    ASSERT_TRUE(db.execute("UPDATE meta SET value = '9' WHERE key = 'version';"
                           " UPDATE meta SET value = '8' WHERE key = 'last_compatible_version';")
                    .ok());
  }
  auto store = MemoryStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("future.db"), std::string::npos) << store.error();
  EXPECT_NE(store.error().find("schema version 9"), std::string::npos) << store.error();
  EXPECT_NE(store.error().find("Upgrade kopt"), std::string::npos) << store.error();
  // Nothing was changed by the refusal.
  sql::Database db = raw(path);
  EXPECT_EQ(*schema_version(db), 9);
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM tasks"), 1);
}

// A version-8 file that a version-7 kopt may still use opens, and is left at version 8.
TEST(SchemaTest, OpensANewerDatabaseThatStaysCompatible) {
  TempDir dir;
  std::filesystem::path path = dir / "newer.db";
  { auto store = testing::open_store(path); }
  {
    sql::Database db = raw(path);
    ASSERT_TRUE(db.execute("UPDATE meta SET value = '8' WHERE key = 'version';"
                           " UPDATE meta SET value = '7' WHERE key = 'last_compatible_version';")
                    .ok());
  }
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(*schema_version(store->database()), 8);  // left as it was
  EXPECT_EQ(*compatible_version(store->database()), 7);
}

// Version 3 only adds a column with a default, so a file migrated to version 3 records that a
// version-2 kopt can still use it; and the statements of version-2 code (explicit column lists,
// no profile_json) do work on it.
TEST(SchemaTest, AVersion3DatabaseRecordsThatVersion2CodeCanUseIt) {
  TempDir dir;
  std::filesystem::path path = dir / "migrated.db";
  {
    OpenOptions options;
    options.target_version = 2;
    auto v2 = MemoryStore::open(path, options);
    ASSERT_TRUE(v2.ok()) << v2.error();
    EXPECT_EQ(*compatible_version(v2->database()), 2);
  }
  OpenOptions v3_options;
  v3_options.target_version = 3;
  auto opened = MemoryStore::open(path, v3_options);
  ASSERT_TRUE(opened.ok()) << opened.error();
  sql::Database& db = opened->database();
  EXPECT_EQ(*schema_version(db), 3);
  EXPECT_EQ(*compatible_version(db), 2);
  // Version-2 code's evaluation INSERT (memory_store.cc before version 3), then its read.
  ASSERT_TRUE(db.execute(R"(
    INSERT INTO tasks(id, name, spec_hash, tags, spec_json, updated_at)
      VALUES (1, 'axpy', 'h', '[]', '{}', 'now');
    INSERT INTO kernels(id, sha256, source, task_id, created_at) VALUES (1, 'a', 'x', 1, 'now');
    INSERT INTO evaluations(kernel_id, task_id, run_id, gpu_model, compute_capability,
      driver_version, cuda_version, verdict, detail, tunables_json, median_us, noise,
      baseline_us, speedup, sol_percent, resources_json, created_at)
      VALUES (1, 1, NULL, 'H100', '9.0', '580', '13.0', 'ok', '', '{}', 250.0, 0.01, 300.0,
              1.2, 80.0, '{}', 'now');)")
                  .ok());
  EXPECT_EQ(*db.query_text("SELECT e.id || ' ' || e.median_us || ' ' || e.profile_json"
                           " FROM evaluations e JOIN tasks t ON t.id = e.task_id"),
            "1 250.0 {}");  // the old row reads as "not profiled"
}

// Version 4 records what each evaluation was judged under; rows from before it read as judged
// under an unknown spec and verifier, new rows keep what they were given, and the file says that
// only version-4 code may use it (older code would write verdicts without their spec).
TEST(SchemaTest, MigrationToVersion4RecordsWhatEachVerdictWasJudgedUnder) {
  TempDir dir;
  std::filesystem::path path = dir / "v3.db";
  write_old_database(path, 3);
  EXPECT_FALSE(raw(path).query_int64("SELECT count(verifier_version) FROM evaluations"));
  OpenOptions v4_options;
  v4_options.target_version = 4;
  auto store = MemoryStore::open(path, v4_options);
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(*schema_version(store->database()), 4);
  EXPECT_EQ(*compatible_version(store->database()), 4);
  auto old = store->best_kernel("axpy", "H100");
  ASSERT_TRUE(old.ok() && *old);
  EXPECT_EQ((*old)->judging_spec_sha256, "");
  EXPECT_EQ((*old)->verifier_version, 0);
  auto task = store->find_task("axpy");
  ASSERT_TRUE(task.ok() && *task);
  EXPECT_EQ((*task)->judging_spec_sha256, "");

  EvaluationRecord e = **old;
  e.median_us = 100.0;
  e.judging_spec_sha256 = "spec-2";
  e.verifier_version = 7;
  ASSERT_TRUE(store->add_evaluation(e).ok());
  auto best = store->best_kernel("axpy", "H100");
  ASSERT_TRUE(best.ok() && *best);
  EXPECT_EQ((*best)->judging_spec_sha256, "spec-2");
  EXPECT_EQ((*best)->verifier_version, 7);

  // A task's judging spec is updated by a run that knows it, and kept by one that does not.
  TaskRecord record = **task;
  record.judging_spec_sha256 = "spec-2";
  ASSERT_TRUE(store->upsert_task(record).ok());
  EXPECT_EQ((*store->find_task("axpy"))->judging_spec_sha256, "spec-2");
  record.judging_spec_sha256 = "";
  ASSERT_TRUE(store->upsert_task(record).ok());
  EXPECT_EQ((*store->find_task("axpy"))->judging_spec_sha256, "spec-2");
}

// A version-3 kopt refuses a file of version 4 or later (it would record verdicts without their
// spec); versions 5, 6 and 7 only add tables, so version-4 code may still use it.
TEST(SchemaTest, AVersion4DatabaseIsRefusedByVersion3Code) {
  TempDir dir;
  auto store = testing::open_store(dir / "fresh.db");
  EXPECT_EQ(*schema_version(store.database()), 7);
  EXPECT_EQ(*compatible_version(store.database()), 4);
  EXPECT_GT(*compatible_version(store.database()), 3);
}

TEST(SchemaTest, RefusesAnotherApplicationsDatabase) {
  TempDir dir;
  std::filesystem::path path = dir / "other.db";
  {
    sql::Database db = raw(path);
    ASSERT_TRUE(db.execute("CREATE TABLE photos(id INTEGER)").ok());
  }
  auto store = MemoryStore::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("not a kopt memory database"), std::string::npos) << store.error();
  EXPECT_TRUE(raw(path).has_table("photos"));
  EXPECT_FALSE(raw(path).has_table("kernels"));
}

TEST(SchemaTest, MissingDatabaseIsNotCreatedForReading) {
  TempDir dir;
  OpenOptions options;
  options.create = false;
  auto store = MemoryStore::open(dir / "nope" / "memory.db", options);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("no memory database"), std::string::npos) << store.error();
  EXPECT_FALSE(std::filesystem::exists(dir / "nope"));
}

}  // namespace
}  // namespace kopt::memory
