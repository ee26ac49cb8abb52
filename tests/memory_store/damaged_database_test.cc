// A database that cannot be read as a memory (issue 37): a damaged file (pages overwritten), a
// file that is not SQLite, a folder given as --db, and an older schema. Every command refuses it
// with what is wrong and what to do, with one exit code (kExitUnreadableDatabase), and writes
// nothing: no lock file beside a folder, no migration by a read command; `kopt memory upgrade`
// migrates explicitly. Through the real kopt binary.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "memory_store/database_check.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt(std::vector<std::string> args) {
  return run_kopt(KOPT_BINARY, std::move(args), std::chrono::seconds(60));
}

// Every command that opens the memory, read and write.
std::vector<std::vector<std::string>> every_command(const std::filesystem::path& dir) {
  return {{"memory", "wins"},
          {"memory", "stats"},
          {"memory", "search", "float4"},
          {"memory", "export", "--jsonl", (dir / "out.jsonl").string()},
          {"memory", "prune", "--dry-run"},
          {"memory", "upgrade"},
          {"status"},
          {"report", "--markdown", (dir / "report.md").string()},
          {"export", "--out", (dir / "kernels").string()}};
}

// Overwrites the type byte of every b-tree page after the first: SQLite's quick_check names the
// damage, an ordinary query may or may not meet it.
void damage(const std::filesystem::path& db) {
  std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
  unsigned char size_bytes[2];
  file.seekg(16);
  file.read(reinterpret_cast<char*>(size_bytes), 2);
  size_t page = (size_t{size_bytes[0]} << 8) | size_bytes[1];
  if (page == 1) page = 65536;
  auto bytes = std::filesystem::file_size(db);
  for (size_t at = page; at < bytes; at += page) {
    file.seekp(static_cast<std::streamoff>(at));
    file.put(static_cast<char>(0x7f));
  }
}

class DamagedDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_ / "memory.db";
    {
      auto store = open_store(db_);
      fill_sample_memory(store);
    }  // closed: the write-ahead log is checkpointed into the file
  }
  TempDir dir_;
  std::filesystem::path db_;
};

TEST_F(DamagedDatabaseTest, ADamagedFileIsRefusedByEveryCommandWithAdvice) {
  damage(db_);
  auto checked = check_database_file(db_);
  ASSERT_FALSE(checked);
  for (auto args : every_command(dir_.path())) {
    args.insert(args.end(), {"--db", db_.string()});
    auto out = kopt(args);
    EXPECT_EQ(out.exit_code, kExitUnreadableDatabase) << args[0] << " " << args[1] << "\n"
                                                      << out.stderr_text;
    EXPECT_TRUE(contains(out.stderr_text, db_.string() + ": the database is damaged"))
        << out.stderr_text;
    EXPECT_TRUE(contains(out.stderr_text, ".recover")) << out.stderr_text;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "report.md"));
}

TEST_F(DamagedDatabaseTest, AFileThatIsNotSqliteIsRefused) {
  auto text = dir_ / "notes.db";
  ASSERT_TRUE(write_file_atomic(text, "these are my notes, not a database\n"));
  auto out = kopt({"memory", "stats", "--db", text.string()});
  EXPECT_EQ(out.exit_code, kExitUnreadableDatabase);
  EXPECT_TRUE(contains(out.stderr_text, "not an SQLite database")) << out.stderr_text;
  EXPECT_EQ(*read_file(text), "these are my notes, not a database\n");
}

TEST_F(DamagedDatabaseTest, AFolderAsTheDatabaseLeavesNothingBehind) {
  auto folder = dir_ / "a-folder";
  std::filesystem::create_directories(folder);
  for (auto args : every_command(dir_.path())) {
    args.insert(args.end(), {"--db", folder.string()});
    auto out = kopt(args);
    EXPECT_EQ(out.exit_code, kExitUnreadableDatabase) << args[1] << ": " << out.stderr_text;
    EXPECT_TRUE(contains(out.stderr_text, "a folder, not a memory database file"))
        << out.stderr_text;
  }
  auto run = kopt({"run", "--tuner-only", "--db", folder.string()});
  EXPECT_EQ(run.exit_code, kExitUnreadableDatabase) << run.stderr_text;
  EXPECT_TRUE(std::filesystem::is_empty(folder));
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().string().find(".lock"), std::string::npos) << entry.path();
  }
}

TEST_F(DamagedDatabaseTest, AnOlderMemoryIsMigratedOnlyByUpgrade) {
  auto old = dir_ / "old.db";
  {
    OpenOptions options;
    options.target_version = 2;
    auto store = MemoryStore::open(old, options);
    ASSERT_TRUE(store) << store.error();
  }
  auto read = kopt({"memory", "stats", "--db", old.string()});
  EXPECT_EQ(read.exit_code, kExitUnreadableDatabase);
  EXPECT_TRUE(contains(read.stderr_text, "kopt memory upgrade --db " + old.string()))
      << read.stderr_text;
  EXPECT_FALSE(contains(read.stderr_text, "prune")) << read.stderr_text;
  auto upgrade = kopt({"memory", "upgrade", "--db", old.string()});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.stderr_text;
  EXPECT_TRUE(contains(upgrade.stdout_text,
                       "upgraded from schema version 2 to " + std::to_string(kSchemaVersion)))
      << upgrade.stdout_text;
  auto again = kopt({"memory", "upgrade", "--db", old.string()});
  EXPECT_TRUE(contains(again.stdout_text, "nothing to do")) << again.stdout_text;
  auto stats = kopt({"memory", "stats", "--db", old.string()});
  EXPECT_EQ(stats.exit_code, 0) << stats.stderr_text;
}

TEST_F(DamagedDatabaseTest, AHealthyMemoryPassesTheCheck) {
  EXPECT_TRUE(check_database_file(db_));
  EXPECT_TRUE(check_database_file(dir_ / "not-there.db"));  // the caller decides
  auto out = kopt({"memory", "stats", "--db", db_.string()});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
}

}  // namespace
}  // namespace kopt::memory
