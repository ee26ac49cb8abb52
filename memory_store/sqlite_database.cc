#include "memory_store/sqlite_database.h"

#include <sqlite3.h>

#include <cstdio>
#include <stdexcept>
#include <utility>

#include "common/utf8.h"

namespace kopt::sql {

namespace {

std::string describe(sqlite3* db, int rc, std::string_view context) {
  std::string message(context);
  message += ": ";
  message += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message += " (";
  message += sqlite3_errstr(rc);
  message += ")";
  return message;
}

}  // namespace

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), db_(std::exchange(other.db_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (handle_) sqlite3_finalize(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Statement::~Statement() {
  if (handle_) sqlite3_finalize(handle_);
}

void Statement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK) {
    throw std::logic_error(
        describe(db_, rc, "bind parameter " + std::to_string(index) + " of " + sql()));
  }
}

Statement& Statement::bind(int index, int64_t value) {
  check_bind(sqlite3_bind_int64(handle_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  check_bind(sqlite3_bind_double(handle_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  check_bind(sqlite3_bind_text64(handle_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8),
             index);
  return *this;
}

Statement& Statement::bind(int index, const std::optional<int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  check_bind(sqlite3_bind_null(handle_, index), index);
  return *this;
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(handle_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return make_error(describe(db_, rc, "sqlite step"));
}

Status Statement::run() {
  while (true) {
    auto row = step();
    if (!row) return make_error(row.error());
    if (!*row) return ok_status();
  }
}

void Statement::reset() {
  sqlite3_reset(handle_);
  sqlite3_clear_bindings(handle_);
}

int64_t Statement::column_int64(int column) const { return sqlite3_column_int64(handle_, column); }

double Statement::column_double(int column) const { return sqlite3_column_double(handle_, column); }

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(handle_, column);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(handle_, column)));
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(handle_, column) == SQLITE_NULL;
}

std::optional<int64_t> Statement::column_optional_int64(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_int64(column);
}

std::string Statement::sql() const {
  const char* text = handle_ ? sqlite3_sql(handle_) : nullptr;
  return text ? text : "";
}

// ---- Database ----

Database::Database(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      cache_(std::move(other.cache_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    cache_.clear();
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    cache_ = std::move(other.cache_);
  }
  return *this;
}

Database::~Database() {
  cache_.clear();  // statements must be finalized before the connection closes
  if (db_) sqlite3_close_v2(db_);
}

namespace {

// "file:" URI of `path` for sqlite3_open_v2 with SQLITE_OPEN_URI, '%', '?' and '#' escaped.
std::string file_uri(const std::filesystem::path& path, const char* query) {
  std::string uri = "file:";
  for (char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      uri += hex;
    } else {
      uri += c;
    }
  }
  return uri + query;
}

}  // namespace

Result<Database> Database::open_read_only(const std::filesystem::path& path,
                                          const Options& options) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Database db(raw, path);
  if (rc != SQLITE_OK) return make_error(describe(raw, rc, path.string() + ": cannot open"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  if (db.query_int64("SELECT count(*) FROM sqlite_master")) return db;
  // A WAL database needs its shared-memory file, which a read-only folder cannot hold: read the
  // file as last checkpointed (nobody can be writing to a folder no one may write to).
  raw = nullptr;
  rc = sqlite3_open_v2(file_uri(path, "?immutable=1").c_str(), &raw,
                       SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr);
  Database immutable(raw, path);
  if (rc != SQLITE_OK) return make_error(describe(raw, rc, path.string() + ": cannot open"));
  sqlite3_extended_result_codes(raw, 1);
  if (auto probe = immutable.query_int64("SELECT count(*) FROM sqlite_master"); !probe) {
    return make_error(path.string() + ": cannot read: " + probe.error());
  }
  return immutable;
}

Result<Database> Database::open(const std::filesystem::path& path, const Options& options) {
  if (options.read_only) {
    auto db = open_read_only(path, options);
    if (!db) return db;
    if (auto s = db->execute("PRAGMA foreign_keys=ON; PRAGMA mmap_size=268435456;"); !s) {
      return make_error(path.string() + ": " + s.error());
    }
    return db;
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (options.create) flags |= SQLITE_OPEN_CREATE;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Database db(raw, path);  // owns the handle even when opening failed
  if (rc != SQLITE_OK) return make_error(describe(raw, rc, path.string() + ": cannot open"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  // WAL lets the CLI read while the daemon writes; NORMAL sync in WAL mode stays consistent after
  // a crash (only the last commits may be lost on power failure).
  auto mode = db.query_text("PRAGMA journal_mode=WAL");
  if (!mode) return make_error(path.string() + ": " + mode.error());
  if (*mode != "wal") {
    return make_error(path.string() + ": cannot switch to WAL mode (journal_mode is " + *mode +
                      ")");
  }
  // Retrieval reads a few hundred scattered rows per prompt: memory-mapped reads (256 MiB of
  // address space, not memory) save a read() system call and a copy per page.
  if (auto s = db.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                          "PRAGMA mmap_size=268435456;");
      !s) {
    return make_error(path.string() + ": " + s.error());
  }
  return db;
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* handle = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &handle, nullptr);
  if (rc != SQLITE_OK) {
    if (handle) sqlite3_finalize(handle);
    return make_error(describe(db_, rc, "prepare '" + std::string(sql) + "'"));
  }
  return Statement(handle, db_);
}

CachedStatement Database::cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    auto statement = prepare(sql);
    if (!statement) throw std::logic_error(statement.error());
    it = cache_.emplace(std::string(sql), std::make_unique<Statement>(std::move(*statement))).first;
  }
  return CachedStatement(it->second.get());
}

Status Database::execute(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = "sqlite: " + std::string(error ? error : sqlite3_errstr(rc)) + " (" +
                          sqlite3_errstr(rc) + ") in: " + clip_utf8(text, 200);
    sqlite3_free(error);
    return make_error(message);
  }
  return ok_status();
}

namespace {

// The first row of `sql` made a value by `read`; a query that returns no row is an error.
template <typename Read>
auto query_first(Database& db, std::string_view sql, Read read)
    -> Result<decltype(read(std::declval<Statement&>()))> {
  auto statement = db.prepare(sql);
  if (!statement) return make_error(statement.error());
  auto row = statement->first_row(read);
  if (!row) return make_error(row.error());
  if (!*row) return make_error("no row from '" + std::string(sql) + "'");
  return std::move(**row);
}

}  // namespace

Result<int64_t> Database::query_int64(std::string_view sql) {
  return query_first(*this, sql, [](const Statement& row) { return row.column_int64(0); });
}

Result<std::string> Database::query_text(std::string_view sql) {
  return query_first(*this, sql, [](const Statement& row) { return row.column_text(0); });
}

bool Database::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

bool is_busy_error(std::string_view message) {
  // Every message carries sqlite3_errstr() of its code: "database is locked" for SQLITE_BUSY,
  // "database table is locked" for SQLITE_LOCKED.
  for (int code : {SQLITE_BUSY, SQLITE_LOCKED}) {
    if (message.find(std::string("(") + sqlite3_errstr(code) + ")") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

bool Database::has_table(const std::string& name) {
  auto statement = cached("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1");
  statement->bind(1, name);
  auto row = statement->step();
  return row.ok() && *row;
}

std::string Database::error_message(std::string_view context) const {
  return describe(db_, sqlite3_extended_errcode(db_), context);
}

// ---- Transaction ----

Result<Transaction> Transaction::begin(Database& db) {
  if (auto s = db.execute("BEGIN IMMEDIATE"); !s) return make_error(s.error());
  Transaction transaction(&db);
  transaction.open_ = true;
  return transaction;
}

Result<Transaction> Transaction::begin_or_join(Database& db) {
  if (!db.in_transaction()) return begin(db);
  Transaction transaction(&db);
  transaction.joined_ = true;
  return transaction;
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      open_(std::exchange(other.open_, false)),
      joined_(std::exchange(other.joined_, false)) {}

Transaction::~Transaction() {
  if (open_ && db_) (void)db_->execute("ROLLBACK");
}

Status Transaction::commit() {
  if (joined_) return ok_status();
  if (!open_) throw std::logic_error("commit of a transaction that is not open");
  auto s = db_->execute("COMMIT");
  if (s) open_ = false;
  return s;
}

}  // namespace kopt::sql
