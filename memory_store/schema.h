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
inline constexpr int kSchemaVersion = 7;
// The oldest code version that can use a database at kSchemaVersion: version 4 records what each
// evaluation was judged under, and older code would write evaluations and task changes without
// it, so that a kernel judged under an old spec would look current (schema.cc says more);
// versions 5, 6 and 7 only add tables.
inline constexpr int kCompatibleVersion = 4;

// The version recorded in the meta table; 0 for a database that has none yet.
Result<int> schema_version(sql::Database& db);
// The last_compatible_version recorded in the meta table; 0 when absent.
Result<int> compatible_version(sql::Database& db);

// Brings `db` to `target_version` (kSchemaVersion unless a test asks for an older one), one
// migration per transaction. Refuses a database written by a newer kopt that this code cannot
// use, and a file that belongs to another application.
Status migrate(sql::Database& db, int target_version = kSchemaVersion);

// For read commands, which never migrate: ok when this code can read `db` as it is (at
// kSchemaVersion, or newer but compatible); else why not and what to do (a writer migrates).
Status check_readable(sql::Database& db);

// Version 1: tasks, runs, kernels, evaluations, pairs, LLM calls and the meta table.
Status migrate_to_version_1(sql::Database& db);
// Version 2: the FTS5 retrieval indexes over pairs and kernels, back-filled from existing rows.
Status migrate_to_version_2(sql::Database& db);
// Version 3: evaluations.profile_json, the hardware counters of a profile pass.
Status migrate_to_version_3(sql::Database& db);
// Version 4: what each evaluation was judged under (the task's judging spec sha256 and the
// verifier version), and each task's current judging spec.
Status migrate_to_version_4(sql::Database& db);

}  // namespace kopt::memory
