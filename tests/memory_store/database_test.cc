// The RAII layer over SQLite: statements reset for reuse, transactions roll back unless committed.
#include "memory_store/sqlite_database.h"

#include <gtest/gtest.h>

#include "tests/memory_store/test_support.h"

namespace kopt::sql {
namespace {

using kopt::memory::testing::TempDir;

Database open_db(const std::filesystem::path& path) {
  auto db = Database::open(path, {});
  if (!db) throw std::runtime_error(db.error());
  return std::move(*db);
}

TEST(DatabaseTest, OpensInWalModeWithForeignKeysAndBusyTimeout) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  EXPECT_EQ(*db.query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*db.query_int64("PRAGMA foreign_keys"), 1);
  EXPECT_EQ(*db.query_int64("PRAGMA busy_timeout"), 5000);
}

TEST(DatabaseTest, RefusesMissingFileWhenNotCreating) {
  TempDir dir;
  Database::Options options;
  options.create = false;
  auto db = Database::open(dir / "missing.db", options);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("missing.db"), std::string::npos) << db.error();
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.db"));
}

TEST(DatabaseTest, CachedStatementIsReusedAndResetAfterUse) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  ASSERT_TRUE(db.execute("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3);").ok());
  Statement* first = nullptr;
  {
    auto statement = db.cached("SELECT x FROM t WHERE x >= ?1 ORDER BY x");
    first = &*statement;
    statement->bind(1, int64_t{2});
    ASSERT_TRUE(*statement->step());
    EXPECT_EQ(statement->column_int64(0), 2);
    // Left mid-iteration: the loan's end must reset it.
  }
  auto again = db.cached("SELECT x FROM t WHERE x >= ?1 ORDER BY x");
  EXPECT_EQ(&*again, first);
  again->bind(1, int64_t{1});
  ASSERT_TRUE(*again->step());
  EXPECT_EQ(again->column_int64(0), 1);
}

TEST(DatabaseTest, BadSqlInCachedStatementIsABug) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  EXPECT_THROW(db.cached("SELEC nonsense"), std::logic_error);
  auto prepared = db.prepare("SELEC nonsense");
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.error().find("syntax error"), std::string::npos) << prepared.error();
}

TEST(DatabaseTest, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  ASSERT_TRUE(db.execute("CREATE TABLE t(x INTEGER)").ok());
  {
    auto transaction = Transaction::begin(db);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(db.execute("INSERT INTO t VALUES (1)").ok());
    EXPECT_TRUE(db.in_transaction());
  }
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM t"), 0);
  {
    auto transaction = Transaction::begin(db);
    ASSERT_TRUE(db.execute("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(transaction->commit().ok());
  }
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM t"), 1);
}

TEST(DatabaseTest, JoinedTransactionLeavesCommitToItsOpener) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  ASSERT_TRUE(db.execute("CREATE TABLE t(x INTEGER)").ok());
  {
    auto outer = Transaction::begin(db);
    {
      auto inner = Transaction::begin_or_join(db);
      ASSERT_TRUE(inner.ok());
      ASSERT_TRUE(db.execute("INSERT INTO t VALUES (1)").ok());
      ASSERT_TRUE(inner->commit().ok());
    }
    EXPECT_TRUE(db.in_transaction());  // the inner commit committed nothing
  }  // the outer one rolls back
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM t"), 0);
}

TEST(DatabaseTest, SecondWriterWaitsThenFailsWithBusy) {
  TempDir dir;
  Database a = open_db(dir / "a.db");
  Database::Options quick;
  quick.busy_timeout_ms = 50;
  auto b = Database::open(dir / "a.db", quick);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(a.execute("CREATE TABLE t(x INTEGER)").ok());
  auto holding = Transaction::begin(a);
  ASSERT_TRUE(holding.ok());
  auto blocked = Transaction::begin(*b);
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().find("locked"), std::string::npos) << blocked.error();
}

TEST(DatabaseTest, MovedDatabaseKeepsWorking) {
  TempDir dir;
  Database db = open_db(dir / "a.db");
  ASSERT_TRUE(db.execute("CREATE TABLE t(x INTEGER)").ok());
  { auto s = db.cached("INSERT INTO t VALUES (?1)"); s->bind(1, int64_t{7}); ASSERT_TRUE(s->run().ok()); }
  Database moved = std::move(db);
  auto s = moved.cached("INSERT INTO t VALUES (?1)");
  s->bind(1, int64_t{8});
  ASSERT_TRUE(s->run().ok());
  EXPECT_EQ(*moved.query_int64("SELECT sum(x) FROM t"), 15);
}

}  // namespace
}  // namespace kopt::sql
