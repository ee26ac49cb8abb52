// A writer killed at any moment leaves a consistent memory: SIGKILL a real writer process
// (memory_writer.cc) mid-run, several times, and check the file after each kill.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "common/subprocess.h"
#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

// Starts the writer, waits for `commits` commits, lets it run a little more, then SIGKILLs it.
// Returns the number of commits it reported.
int64_t run_and_kill(const std::filesystem::path& db, int64_t commits, std::chrono::microseconds extra) {
  auto writer = Subprocess::start({KOPT_MEMORY_WRITER, db.string()}, Subprocess::StderrMode::kCapture);
  if (!writer) throw std::runtime_error(writer.error());
  int64_t reported = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (reported < commits) {
    auto line = writer->read_line(deadline);
    if (!line || !*line) {
      throw std::runtime_error("writer stopped early: " + writer->captured_stderr());
    }
    reported = std::stoll(line->value().substr(std::string("committed ").size()));
  }
  std::this_thread::sleep_for(extra);
  writer->kill_group();
  return reported;
}

void expect_consistent(const std::filesystem::path& path, int64_t at_least_commits) {
  auto store = MemoryStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*db.query_text("PRAGMA integrity_check"), "ok");
  auto fk = db.prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(fk.ok());
  EXPECT_FALSE(*fk->step()) << "a row refers to a missing row";
  // The full-text indexes agree with their tables.
  EXPECT_TRUE(db.execute("INSERT INTO pair_fts(pair_fts) VALUES ('integrity-check')").ok());
  EXPECT_TRUE(db.execute("INSERT INTO kernel_fts(kernel_fts) VALUES ('integrity-check')").ok());
  int64_t kernels = *db.query_int64("SELECT count(*) FROM kernels");
  int64_t evaluations = *db.query_int64("SELECT count(*) FROM evaluations");
  int64_t pairs = *db.query_int64("SELECT count(*) FROM pairs");
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM pair_fts"), pairs);
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM kernel_fts"), kernels);
  // Whole transactions or nothing: five of each per transaction, plus the root kernel.
  EXPECT_EQ(kernels - 1, evaluations);
  EXPECT_EQ(evaluations, pairs);
  EXPECT_EQ(pairs % 5, 0);
  EXPECT_EQ(*db.query_int64("SELECT count(*) FROM pairs WHERE retrieved_count != 1"), 0);
  // Every commit the writer reported survived its death.
  EXPECT_GE(pairs, at_least_commits * 5);
}

TEST(CrashTest, KilledWriterLeavesAConsistentMemory) {
  TempDir dir;
  std::filesystem::path db = dir / "memory.db";
  std::mt19937 rng(12345);
  int64_t total = 0;
  for (int round = 0; round < 4; ++round) {
    std::chrono::microseconds extra(rng() % 3000);
    int64_t reported = run_and_kill(db, 20, extra);
    total += reported;
    SCOPED_TRACE("round " + std::to_string(round));
    expect_consistent(db, total);
  }
}

}  // namespace
}  // namespace kopt::memory
