#include "memory_store/database_check.h"

#include <fstream>

#include "memory_store/sqlite_database.h"

namespace kopt::memory {

namespace {

std::string recovery_advice(const std::filesystem::path& path) {
  return "Restore a backup of it, or salvage what SQLite can still read into a new file: "
         "sqlite3 '" +
         path.string() + "' .recover | sqlite3 recovered.db, then use --db recovered.db";
}

}  // namespace

Status check_database_file(const std::filesystem::path& path, bool thorough) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return ok_status();
  if (std::filesystem::is_directory(status)) {
    return make_error(path.string() +
                      ": a folder, not a memory database file (give --db the file, e.g. " +
                      (path / "memory.db").string() + ")");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return make_error(path.string() + ": not a regular file, so not a memory database");
  }
  // An empty file is what SQLite itself creates first: a new database, not a damaged one.
  std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (bytes == 0 && !ec) return ok_status();
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  if (!in || std::string(header, 15) != "SQLite format 3") {
    return make_error(path.string() +
                      ": not an SQLite database (its first bytes are not "
                      "\"SQLite format 3\"), so not a kopt memory; check --db");
  }
  sql::Database::Options options;
  options.create = false;
  options.read_only = true;
  auto db = sql::Database::open(path, options);
  if (!db)
    return make_error(path.string() + ": the database is damaged: SQLite cannot open it (" +
                      db.error() + "). " + recovery_advice(path));
  // quick_check reads every page and checks its structure (not the index contents): the
  // damage SQLite would otherwise meet only when a query reaches that page. Without it, the
  // schema (the pages every statement reads first) at least.
  const bool every_page = thorough || ec || bytes <= kQuickCheckBytes;
  auto result = every_page ? db->query_text("PRAGMA quick_check(3)")
                           : db->query_text(
                                 "SELECT CASE WHEN count(*) >= 0 THEN 'ok' END FROM "
                                 "sqlite_master");
  if (!result || *result != "ok") {
    return make_error(path.string() + ": the database is damaged (SQLite's quick_check: " +
                      (result ? *result : result.error()) + "). kopt does not read or write it. " +
                      recovery_advice(path));
  }
  return ok_status();
}

}  // namespace kopt::memory
