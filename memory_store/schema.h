// The memory database's schema and its migrations, in the manner of Chromium's sql::MetaTable:
// a `meta` table holds the schema `version` and the `last_compatible_version` (the oldest
// version of this code that can still use the file). Each migration runs in one transaction, so
// a database is always at exactly one version.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

// 'kopt' in ASCII: PRAGMA application_id marks the file as a kopt memory.
inline constexpr int64_t kApplicationId = 0x6B6F7074;
// The schema version this code writes.
inline constexpr int kSchemaVersion = 4;
// The oldest code version that can use a database at kSchemaVersion: version 3 only added a
// column with a default, which version-2 code never reads or names (schema.cc says how checked),
// and the plans and transcripts step only adds tables that older code never names.
inline constexpr int kCompatibleVersion = 2;

// The version recorded in the meta table; 0 for a database that has none yet.
Result<int> schema_version(sql::Database& db);
// The last_compatible_version recorded in the meta table; 0 when absent.
Result<int> compatible_version(sql::Database& db);

// Brings `db` to `target_version` (kSchemaVersion unless a test asks for an older one), one
// migration per transaction. Refuses a database written by a newer kopt that this code cannot
// use, and a file that belongs to another application.
Status migrate(sql::Database& db, int target_version = kSchemaVersion);

// Version 1: tasks, runs, kernels, evaluations, pairs, LLM calls and the meta table.
Status migrate_to_version_1(sql::Database& db);
// Version 2: the FTS5 retrieval indexes over pairs and kernels, back-filled from existing rows.
Status migrate_to_version_2(sql::Database& db);

}  // namespace kopt::memory
