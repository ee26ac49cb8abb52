#include "memory_store/schema.h"

#include <string>
#include <vector>

#include "memory_store/example_draws.h"
#include "memory_store/fts_index.h"
#include "memory_store/plan_store.h"
#include "memory_store/production_baselines.h"

namespace kopt::memory {

namespace {

Result<int> meta_int(sql::Database& db, const char* key) {
  if (!db.has_table("meta")) return 0;
  auto statement = db.cached("SELECT value FROM meta WHERE key = ?1");
  statement->bind(1, key);
  auto row = statement->step();
  if (!row) return make_error(row.error());
  if (!*row) return 0;
  return static_cast<int>(statement->column_int64(0));
}

Status set_meta(sql::Database& db, const char* key, int value) {
  auto statement = db.cached("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
  statement->bind(1, key).bind(2, value);
  return statement->run();
}

// One schema version: how to reach it from the one before, and the oldest code version that can
// still use a database at it (its last_compatible_version).
struct Migration {
  Status (*step)(sql::Database&);
  int last_compatible;
};

// Runs one migration step and records the new version inside the same transaction, so a crash
// leaves the database at the old version or the new one, never in between.
Status run_step(sql::Database& db, int version, const Migration& migration) {
  auto transaction = sql::Transaction::begin(db);
  if (!transaction) return make_error(transaction.error());
  // Another process may have migrated while this one waited for the write lock.
  auto current = schema_version(db);
  if (!current) return make_error(current.error());
  if (*current >= version) return transaction->commit();
  if (auto s = migration.step(db); !s) {
    return make_error("migration to schema version " + std::to_string(version) + ": " + s.error());
  }
  if (auto s = set_meta(db, "version", version); !s) return s;
  if (auto s = set_meta(db, "last_compatible_version", migration.last_compatible); !s) return s;
  return transaction->commit();
}

}  // namespace

Result<int> schema_version(sql::Database& db) { return meta_int(db, "version"); }

Result<int> compatible_version(sql::Database& db) {
  return meta_int(db, "last_compatible_version");
}

// Version 1: The meta table (version, compatible version) and the tasks a run searches.
constexpr const char* kV1MetaAndTasks = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tasks (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  spec_hash TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]',
  spec_json TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
)sql";
// Version 1: One row per daemon run.
constexpr const char* kV1Runs = R"sql(CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  config_json TEXT NOT NULL DEFAULT '{}',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL
);
)sql";
// Version 1: Kernel sources, content-addressed, with their parent and origin.
constexpr const char* kV1Kernels = R"sql(CREATE TABLE kernels (
  id INTEGER PRIMARY KEY,
  sha256 TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  parent_id INTEGER REFERENCES kernels(id),
  run_id INTEGER REFERENCES runs(id),
  origin_agent TEXT NOT NULL DEFAULT '',
  origin_model TEXT NOT NULL DEFAULT '',
  origin_prompt_template TEXT NOT NULL DEFAULT '',
  origin_tuner INTEGER NOT NULL DEFAULT 0,
  tunables_json TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX kernels_task ON kernels(task_id);
CREATE INDEX kernels_parent ON kernels(parent_id);
)sql";
// Version 1: Every judging of a kernel on a GPU.
constexpr const char* kV1Evaluations = R"sql(CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  kernel_id INTEGER NOT NULL REFERENCES kernels(id),
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  run_id INTEGER REFERENCES runs(id),
  gpu_model TEXT NOT NULL,
  compute_capability TEXT NOT NULL DEFAULT '',
  driver_version TEXT NOT NULL DEFAULT '',
  cuda_version TEXT NOT NULL DEFAULT '',
  verdict TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  tunables_json TEXT NOT NULL DEFAULT '{}',
  median_us REAL NOT NULL DEFAULT 0,
  noise REAL NOT NULL DEFAULT 0,
  baseline_us REAL NOT NULL DEFAULT 0,
  speedup REAL NOT NULL DEFAULT 0,
  sol_percent REAL NOT NULL DEFAULT 0,
  resources_json TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX evaluations_best ON evaluations(task_id, gpu_model, verdict, median_us);
CREATE INDEX evaluations_kernel ON evaluations(kernel_id);
)sql";
// Version 1: Slow-to-fast pairs, the lessons retrieval hands to prompts.
constexpr const char* kV1Pairs = R"sql(CREATE TABLE pairs (
  id INTEGER PRIMARY KEY,
  slow_kernel_id INTEGER NOT NULL REFERENCES kernels(id),
  fast_kernel_id INTEGER NOT NULL REFERENCES kernels(id),
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  speedup REAL NOT NULL,
  gpu_model TEXT NOT NULL,
  gpu_arch TEXT NOT NULL DEFAULT '',
  summary TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]',
  family TEXT NOT NULL DEFAULT '',
  is_negative INTEGER NOT NULL DEFAULT 0,
  lineage_root_id INTEGER NOT NULL REFERENCES kernels(id),
  retrieved_count INTEGER NOT NULL DEFAULT 0,
  improved_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  UNIQUE (slow_kernel_id, fast_kernel_id, gpu_model)
);
CREATE INDEX pairs_task ON pairs(task_id, is_negative);
CREATE INDEX pairs_family ON pairs(family, is_negative);
)sql";
// Version 1: LLM accounting (never a prompt or a key).
constexpr const char* kV1LlmCalls = R"sql(CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  agent TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  latency_ms REAL NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX llm_calls_run ON llm_calls(run_id);
)sql";

// The first schema, one named step per table group; the statements run in one execute, so the
// SQL is the same text the database was always created with.
Status migrate_to_version_1(sql::Database& db) {
  std::string set_id = "PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
  std::string sql = set_id;
  for (const char* step :
       {kV1MetaAndTasks, kV1Runs, kV1Kernels, kV1Evaluations, kV1Pairs, kV1LlmCalls})
    sql += step;
  return db.execute(sql);
}

Status migrate_to_version_2(sql::Database& db) {
  // Identifiers keep their underscores ("__shfl_xor_sync" is one word); index_terms() adds the
  // parts separately. Deleting a pair or kernel removes its index row in the same transaction.
  // The pair rank weighs columns: summary 1, tags 2, task 3, slow kernel 1, fast kernel 0.5 (the
  // current kernel resembles the slow side of a useful pair).
  auto s = db.execute(R"sql(
CREATE VIRTUAL TABLE pair_fts USING fts5(
  summary, tags, task, slow_terms, fast_terms, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE kernel_fts USING fts5(terms, task, tokenize = "unicode61 tokenchars '_'");
INSERT INTO pair_fts(pair_fts, rank) VALUES ('rank', 'bm25(1.0, 2.0, 3.0, 1.0, 0.5)');
CREATE TRIGGER pairs_fts_delete AFTER DELETE ON pairs BEGIN
  DELETE FROM pair_fts WHERE rowid = old.id;
END;
CREATE TRIGGER kernels_fts_delete AFTER DELETE ON kernels BEGIN
  DELETE FROM kernel_fts WHERE rowid = old.id;
END;
)sql");
  if (!s) return s;
  std::vector<int64_t> ids;
  for (const char* sql :
       {"SELECT id FROM pairs ORDER BY id", "SELECT id FROM kernels ORDER BY id"}) {
    auto statement = db.prepare(sql);
    if (!statement) return make_error(statement.error());
    ids.clear();
    while (true) {
      auto row = statement->step();
      if (!row) return make_error(row.error());
      if (!*row) break;
      ids.push_back(statement->column_int64(0));
    }
    bool pairs = std::string(sql).find("pairs") != std::string::npos;
    for (int64_t id : ids) {
      if (auto indexed = pairs ? index_pair(db, id) : index_kernel(db, id); !indexed) {
        return indexed;
      }
    }
  }
  return ok_status();
}

Status migrate_to_version_3(sql::Database& db) {
  // Hardware counters of an evaluation's profile pass (sandbox/kernel_profile.h's JSON), '{}'
  // where none was taken: every evaluation before version 3, and most after it.
  return db.execute("ALTER TABLE evaluations ADD COLUMN profile_json TEXT NOT NULL DEFAULT '{}'");
}

Status migrate_to_version_4(sql::Database& db) {
  // judging_spec_sha256: sha256 of the canonical task.json and reference.cu the verdict came
  // from (sandbox/judging_spec.h); verifier_version: the verifier's kVerifierVersion. Rows from
  // before version 4 keep '' and 0: "judged under an unknown spec", which every reader flags.
  // tasks.judging_spec_sha256 is the task's spec as the last run saw it.
  return db.execute(R"sql(
ALTER TABLE evaluations ADD COLUMN judging_spec_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN verifier_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN judging_spec_sha256 TEXT NOT NULL DEFAULT '';
)sql");
}

namespace {

// The file's version once it is known to be a kopt memory (0: empty), or why it is not one, or
// why this code cannot use it (a newer, incompatible kopt wrote it).
Result<int> usable_version(sql::Database& db) {
  auto application_id = db.query_int64("PRAGMA application_id");
  if (!application_id) return make_error(db.path().string() + ": " + application_id.error());
  auto version = schema_version(db);
  if (!version) return make_error(db.path().string() + ": " + version.error());
  bool empty = *version == 0;
  if (empty) {
    auto tables = db.query_int64("SELECT count(*) FROM sqlite_master");
    if (!tables) return make_error(db.path().string() + ": " + tables.error());
    if (*tables > 0 || (*application_id != 0 && *application_id != kApplicationId)) {
      return make_error(db.path().string() +
                        ": not a kopt memory database (it holds other tables); pass another --db");
    }
  } else if (*application_id != kApplicationId) {
    return make_error(db.path().string() + ": not a kopt memory database (application_id " +
                      std::to_string(*application_id) + ")");
  }
  auto compatible = compatible_version(db);
  if (!compatible) return make_error(db.path().string() + ": " + compatible.error());
  if (*version > kSchemaVersion && *compatible > kSchemaVersion) {
    return make_error(db.path().string() + ": the memory database has schema version " +
                      std::to_string(*version) + " and needs a kopt that knows version " +
                      std::to_string(*compatible) + " or later; this kopt " + KOPT_VERSION +
                      " knows up to version " + std::to_string(kSchemaVersion) +
                      ". Upgrade kopt, or pass another --db.");
  }
  return *version;
}

}  // namespace

Status check_readable(sql::Database& db) {
  auto version = usable_version(db);
  if (!version) return make_error(version.error());
  if (*version == 0) {
    return make_error(db.path().string() + ": an empty database, not yet a kopt memory");
  }
  if (*version < kSchemaVersion) {
    return make_error(db.path().string() + ": the memory database has schema version " +
                      std::to_string(*version) + ", older than this kopt's " +
                      std::to_string(kSchemaVersion) +
                      "; a read command does not migrate it in place. Migrate it explicitly "
                      "with kopt memory upgrade --db " +
                      db.path().string() +
                      " (keep a copy first if an older kopt must still read it), or read it "
                      "with the kopt that wrote it.");
  }
  return ok_status();
}

Status migrate(sql::Database& db, int target_version) {
  auto version = usable_version(db);
  if (!version) return make_error(version.error());
  if (*version > kSchemaVersion) return ok_status();  // newer, but written to stay readable
  // Versions 1 and 2 can be used only by code that knows them. Version 3 only adds
  // evaluations.profile_json with a default ('{}'), and version-2 code names its columns in every
  // statement over evaluations (the INSERT's column list, rows::kEvaluationColumns; no SELECT *,
  // no positional read of a whole row: checked in the tree before commit 1731187, bench/ and
  // scripts/ included), so it still reads and writes a version-3 file correctly:
  // its new rows are "not profiled". A kopt 2 then opens it (a newer but compatible database).
  // Version 4 is not usable by older code although it only adds columns with defaults: a
  // version-3 kopt would store evaluations without their judging spec and update a task's spec
  // without its judging hash, so a kernel verified under an old task.json would then read as
  // current in `kopt memory wins`, the report and the export; hence last_compatible_version 4.
  // Version 5 adds the plans and llm_transcripts tables (plan_store.h), which older code never
  // names, so it keeps version 4's compatible version. Version 6 adds the production_baselines
  // table (production_baselines.h), likewise never named by older code: compatible version 4.
  // Version 7 adds the example_draws table (example_draws.h), the same way: compatible 4.
  static constexpr Migration kMigrations[] = {{migrate_to_version_1, 1}, {migrate_to_version_2, 2},
                                              {migrate_to_version_3, 2}, {migrate_to_version_4, 4},
                                              {migrate_to_version_5, 4}, {migrate_to_version_6, 4},
                                              {migrate_to_version_7, 4}};
  static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");
  static_assert(kMigrations[kSchemaVersion - 1].last_compatible == kCompatibleVersion);
  for (int next = *version + 1; next <= target_version; ++next) {
    if (auto s = run_step(db, next, kMigrations[next - 1]); !s) {
      return make_error(db.path().string() + ": " + s.error());
    }
  }
  return ok_status();
}

}  // namespace kopt::memory
