// Whether a file can be read as a kopt memory at all, before a command uses it: a folder, a file
// that is not SQLite, or damaged pages (SQLite's quick_check) are refused with what to do, and
// every command exits with the one code kExitUnreadableDatabase for them.
#pragma once

#include <cstdint>
#include <filesystem>

#include "common/result.h"

namespace kopt::memory {

// "cannot read this database": a folder, not an SQLite file, damaged, or (for a read command)
// an older schema that `kopt memory upgrade` migrates.
inline constexpr int kExitUnreadableDatabase = 5;

// Up to this size every command runs SQLite's quick_check (a fraction of a second); above it
// only commands that write (`kopt run`, prune, import, upgrade) do, since quick_check reads every
// page: 5 s for a 200 MB memory on a loaded 2-core machine, too much for each `kopt status`.
inline constexpr std::uintmax_t kQuickCheckBytes = std::uintmax_t(16) << 20;

// Ok when `path` does not exist (the caller decides whether that is an error) or is an SQLite
// file that passes the check; otherwise an error naming the file, what is wrong and what to do
// (a backup, sqlite3's .recover). The check: the header and the schema always; every page
// (PRAGMA quick_check) when `thorough` or the file is at most kQuickCheckBytes. Opens the file
// read-only: changes nothing.
Status check_database_file(const std::filesystem::path& path, bool thorough = false);

}  // namespace kopt::memory
