// Every command finds the same database (--db, $KOPT_DB, the config's database.path through
// --config or $KOPT_CONFIG), and read commands read a database they may not write, never
// migrating it. Runs the real kopt binary on real files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "memory_store/schema.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt_with_env(std::vector<std::string> args, const std::string& config) {
  std::vector<std::string> command = {"env", "-u", "KOPT_DB", "KOPT_CONFIG=" + config, KOPT_BINARY};
  command.insert(command.end(), args.begin(), args.end());
  auto out = run_command(command, "", std::chrono::seconds(120));
  if (!out) throw std::runtime_error(out.error());
  return *out;
}

TEST(DatabaseLocationTest, EveryCommandReadsTheConfigsDatabase) {
  TempDir dir;
  std::filesystem::path db = dir / "night" / "memory.db";
  {
    auto store = open_store(db);
    fill_sample_memory(store);
  }
  std::filesystem::path config = dir / "config.json";
  ASSERT_TRUE(write_file_atomic(config, R"({"database": {"path": "night/memory.db"}})").ok());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"memory", "wins"},
        {"report", "--run", "all", "--markdown", "-"},
        {"export", "--out", (dir / "out").string(), "--min-speedup", "0"}}) {
    // Through $KOPT_CONFIG, and through --config with $KOPT_CONFIG naming a missing file.
    auto out = kopt_with_env(args, config.string());
    EXPECT_EQ(out.exit_code, 0) << args[0] << ": " << out.stderr_text;
    std::vector<std::string> flagged = args;
    flagged.insert(flagged.end(), {"--config", config.string()});
    out = kopt_with_env(flagged, (dir / "no-such-config.json").string());
    EXPECT_EQ(out.exit_code, 0) << args[0] << " --config: " << out.stderr_text;
  }
  auto out = kopt_with_env({"memory", "wins"}, config.string());
  EXPECT_TRUE(contains(out.stdout_text, "warp shuffles replace")) << out.stdout_text;
  out = kopt_with_env({"doctor"}, config.string());
  EXPECT_TRUE(contains(out.stdout_text, db.string())) << out.stdout_text;
}

TEST(DatabaseLocationTest, ReadCommandsReadAFileAndFolderNobodyMayWrite) {
  TempDir dir;
  std::filesystem::path folder = dir / "shared";
  std::filesystem::path db = folder / "memory.db";
  {
    auto store = open_store(db);
    fill_sample_memory(store);
  }
  ASSERT_EQ(::chmod(db.c_str(), 0444), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
  if (::access(db.c_str(), W_OK) == 0) GTEST_SKIP() << "running as root: modes do not bind";
  auto out = kopt_with_env({"memory", "wins", "--db", db.string()}, "/nonexistent");
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "warp shuffles replace")) << out.stdout_text;
  out = kopt_with_env({"memory", "stats", "--db", db.string()}, "/nonexistent");
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  ::chmod(folder.c_str(), 0755);
}

TEST(DatabaseLocationTest, ReadCommandsNeverMigrateAnOlderDatabase) {
  TempDir dir;
  std::filesystem::path db = dir / "old.db";
  {
    OpenOptions options;
    options.target_version = 3;
    auto store = MemoryStore::open(db, options);
    ASSERT_TRUE(store.ok()) << store.error();
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"memory", "stats"}, {"memory", "wins"}}) {
    std::vector<std::string> with_db = args;
    with_db.insert(with_db.end(), {"--db", db.string()});
    auto out = kopt_with_env(with_db, "/nonexistent");
    EXPECT_NE(out.exit_code, 0);
    EXPECT_TRUE(contains(out.stderr_text, "does not migrate it")) << out.stderr_text;
  }
  auto raw = sql::Database::open(db, {});
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(*schema_version(*raw), 3);  // untouched
}

}  // namespace
}  // namespace kopt::memory
