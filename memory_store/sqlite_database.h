// Move-only RAII owners for an SQLite connection, its prepared statements and its transactions,
// in the manner of Chromium's sql/: a Statement resets itself for reuse, the Database caches
// statements by their SQL text, and a Transaction rolls back unless committed.
//
// Expected failures (a busy or full disk, a corrupt file) come back as Result/Status; SQL that
// does not prepare or a bind index out of range is a bug in kopt and throws std::logic_error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kopt::sql {

class Database;

// One prepared statement. Bind parameters are 1-based, columns 0-based (as in SQLite).
class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds a value to parameter `index`; an empty optional binds NULL.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, const std::optional<int64_t>& value);
  Statement& bind_null(int index);
  // Binds `values` to parameters 1, 2, ... in order: an INSERT's columns written once, without
  // hand-numbered indexes to keep in step with the SQL.
  template <typename... Values>
  Statement& bind_all(const Values&... values) {
    int index = 0;
    (bind(++index, values), ...);
    return *this;
  }

  // Advances to the next row: true while a row is available, false when done.
  Result<bool> step();
  // Steps to completion (for statements that return no rows).
  Status run();
  // Makes the statement ready to run again and clears its bindings.
  void reset();

  // Steps through every row, handing the statement to `on_row` to read that row's columns; a
  // failed step ends it with that step's error.
  template <typename OnRow>
  Status each_row(OnRow&& on_row) {
    while (true) {
      auto row = step();
      if (!row) return make_error(row.error());
      if (!*row) return ok_status();
      on_row(*this);
    }
  }
  // Every row, each made a value by `read` (a row reader such as rows::read_pair).
  template <typename Read>
  auto collect(Read&& read) -> Result<std::vector<decltype(read(std::declval<Statement&>()))>> {
    std::vector<decltype(read(std::declval<Statement&>()))> out;
    if (auto s = each_row([&](const Statement&) { out.push_back(read(*this)); }); !s)
      return make_error(s.error());
    return out;
  }
  // The first row made a value by `read`, or nothing when the statement returns no row.
  template <typename Read>
  auto first_row(Read&& read) -> Result<std::optional<decltype(read(std::declval<Statement&>()))>> {
    using Value = decltype(read(std::declval<Statement&>()));
    auto row = step();
    if (!row) return make_error(row.error());
    if (!*row) return std::optional<Value>();
    return std::optional<Value>(read(*this));
  }

  int64_t column_int64(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  bool column_is_null(int column) const;
  // NULL becomes an empty optional.
  std::optional<int64_t> column_optional_int64(int column) const;

  // The SQL text, for messages.
  std::string sql() const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* handle, sqlite3* db) : handle_(handle), db_(db) {}
  void check_bind(int rc, int index);

  sqlite3_stmt* handle_ = nullptr;
  sqlite3* db_ = nullptr;
};

// One column of the current row into a field, read as the field's type. A type the memory
// stores another way (an enum by its name, a list as JSON) has its own overload in this namespace
// (memory_store/row_readers.h), which read_columns finds where it is used.
inline void read_column(const Statement& row, int column, int64_t& out) {
  out = row.column_int64(column);
}
inline void read_column(const Statement& row, int column, int& out) {
  out = static_cast<int>(row.column_int64(column));
}
inline void read_column(const Statement& row, int column, bool& out) {
  out = row.column_int64(column) != 0;
}
inline void read_column(const Statement& row, int column, double& out) {
  out = row.column_double(column);
}
inline void read_column(const Statement& row, int column, std::string& out) {
  out = row.column_text(column);
}
inline void read_column(const Statement& row, int column, std::optional<int64_t>& out) {
  out = row.column_optional_int64(column);
}

// Reads columns `first`, `first` + 1, ... of the current row into `fields`, in order: a SELECT's
// columns are listed once, in the SELECT's order, with no hand-numbered indexes to keep in step
// with the SQL (a column added in the middle used to shift every index after it by hand).
template <typename... Fields>
void read_columns_from(const Statement& row, int first, Fields&... fields) {
  int column = first;
  (read_column(row, column++, fields), ...);
}
template <typename... Fields>
void read_columns(const Statement& row, Fields&... fields) {
  read_columns_from(row, 0, fields...);
}

// A cached statement on loan: resets the statement when it goes out of scope so the next user
// finds it ready.
class CachedStatement {
 public:
  explicit CachedStatement(Statement* statement) : statement_(statement) {}
  CachedStatement(const CachedStatement&) = delete;
  CachedStatement& operator=(const CachedStatement&) = delete;
  ~CachedStatement() { statement_->reset(); }

  Statement* operator->() { return statement_; }
  Statement& operator*() { return *statement_; }

 private:
  Statement* statement_;
};

// One connection. Opening applies the connection settings every kopt database needs: WAL,
// a busy timeout, foreign keys, synchronous=NORMAL.
class Database {
 public:
  struct Options {
    bool create = true;          // false: refuse a missing file instead of creating it
    int busy_timeout_ms = 5000;  // other writers (the daemon, a CLI command) wait this long
    // Open for reading only: no journal-mode change, works on a file or folder the user may
    // only read (then without the write-ahead log's shared memory: the file as last written).
    bool read_only = false;
  };

  static Result<Database> open(const std::filesystem::path& path, const Options& options);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Prepares a statement the caller owns (for one-off SQL such as migrations).
  Result<Statement> prepare(std::string_view sql);
  // A statement prepared once per connection and reused; `sql` must be valid (a bug otherwise).
  CachedStatement cached(std::string_view sql);
  // Runs one or more statements without results (DDL, PRAGMAs).
  Status execute(std::string_view sql);

  // The first column of the first row of `sql` as an integer (PRAGMA user_version and friends).
  Result<int64_t> query_int64(std::string_view sql);
  // The first column of the first row of `sql` as text.
  Result<std::string> query_text(std::string_view sql);

  // True between BEGIN and COMMIT/ROLLBACK.
  bool in_transaction() const;
  int64_t last_insert_rowid() const;
  int changes() const;
  bool has_table(const std::string& name);
  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() { return db_; }

  // "context: message (code name)" from the connection's last error.
  std::string error_message(std::string_view context) const;

 private:
  Database(sqlite3* db, std::filesystem::path path);
  static Result<Database> open_read_only(const std::filesystem::path& path, const Options& options);

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
};

// True when `message` (an error of this file's classes) says another connection held the lock
// past the busy timeout (SQLITE_BUSY or SQLITE_LOCKED): the write is worth retrying.
bool is_busy_error(std::string_view message);

// BEGIN IMMEDIATE on construction (so a writer never fails to upgrade its lock midway), ROLLBACK
// on destruction unless commit() succeeded. Not nestable: one transaction per connection.
class Transaction {
 public:
  static Result<Transaction> begin(Database& db);
  // Joins the transaction already open on `db` (commit and rollback are then the opener's),
  // or begins one.
  static Result<Transaction> begin_or_join(Database& db);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Makes every change since begin() durable; after a failure the destructor rolls back.
  // A joined transaction commits nothing: its opener does.
  Status commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;
  bool open_ = false;
  bool joined_ = false;
};

}  // namespace kopt::sql
