// The daemon's lock, its tables in the memory database (submissions, status) and the progress
// document that `kopt status` prints.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "memory_store/memory_store.h"
#include "src/orchestrator/daemon_lock.h"
#include "src/orchestrator/daemon_tables.h"
#include "src/orchestrator/progress.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::TempDir;

TEST(DaemonLock, ASecondDaemonIsToldWhoRuns) {
  TempDir dir;
  auto db = dir / "memory.db";
  EXPECT_FALSE(DaemonLock::holder(db));
  {
    auto first = DaemonLock::acquire(db);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(DaemonLock::holder(db), ::getpid());
    // flock locks belong to the open file description: a second open in this process conflicts
    // just as another process would.
    auto second = DaemonLock::acquire(db);
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().find("already running on " + db.string() + " (pid " +
                                  std::to_string(::getpid()) + ")"),
              std::string::npos)
        << second.error();
  }
  EXPECT_FALSE(DaemonLock::holder(db));
  EXPECT_TRUE(DaemonLock::acquire(db));
}

TEST(DaemonLock, AKilledOwnerLeavesNoStaleLock) {
  TempDir dir;
  auto db = dir / "memory.db";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = DaemonLock::acquire(db);
    char byte = lock ? 1 : 0;
    [[maybe_unused]] ssize_t n = ::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  EXPECT_EQ(DaemonLock::holder(db), child);
  EXPECT_FALSE(DaemonLock::acquire(db));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(DaemonLock::holder(db));
  EXPECT_TRUE(DaemonLock::acquire(db));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(DaemonTables, SubmissionsAreTakenOnce) {
  TempDir dir;
  auto store = memory::MemoryStore::open(dir / "memory.db");
  ASSERT_TRUE(store) << store.error();
  auto& db = store->database();
  EXPECT_EQ(*pending_submissions(db), 0);
  ASSERT_TRUE(submit_task(db, "tasks/axpy"));
  ASSERT_TRUE(submit_task(db, (dir / "softmax").string()));
  EXPECT_EQ(*pending_submissions(db), 2);
  auto taken = take_submissions(db, 7);
  ASSERT_TRUE(taken) << taken.error();
  ASSERT_EQ(taken->size(), 2u);
  EXPECT_TRUE(std::filesystem::path(taken->at(0).task_dir).is_absolute());
  EXPECT_EQ(taken->at(1).task_dir, (dir / "softmax").string());
  EXPECT_EQ(*pending_submissions(db), 0);
  EXPECT_TRUE(take_submissions(db, 8)->empty());
}

TEST(DaemonTables, StatusRowsRoundTripAndTheLatestWins) {
  TempDir dir;
  auto store = memory::MemoryStore::open(dir / "memory.db");
  ASSERT_TRUE(store);
  auto& db = store->database();
  EXPECT_FALSE(*read_status(db));
  ASSERT_TRUE(write_status(db, {3, 42, "", 12.5, "{\"a\":1}"}));
  ASSERT_TRUE(write_status(db, {4, 43, "", 1.0, "{\"b\":2}"}));
  ASSERT_TRUE(write_status(db, {3, 42, "", 20.0, "{\"a\":2}"}));
  auto latest = read_status(db);
  ASSERT_TRUE(latest && *latest);
  EXPECT_EQ((*latest)->run_id, 4);
  auto three = read_status(db, 3);
  ASSERT_TRUE(three && *three);
  EXPECT_DOUBLE_EQ((*three)->active_seconds, 20.0);
  EXPECT_EQ((*three)->status_json, "{\"a\":2}");
  EXPECT_FALSE(reopen_run(db, 99));
}

TEST(Progress, RoundTripsThroughJsonAndRendersOneLinePerTask) {
  RunProgress p;
  p.run_id = 5;
  p.pid = 1234;
  p.state = "running";
  p.mode = "llm";
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.elapsed_seconds = 3725;
  p.time_left_seconds = 600;
  p.max_usd = 25;
  p.tokens = 1234567;
  p.cost_usd = 3.5;
  p.tasks.push_back({"axpy", "searching", "", 1.08, 93.2, 280.0, 12, 3, 2, 45000, 0.4});
  p.tasks.push_back({"softmax", "done", "plateau", 1.61, 70.1, 900.0, 40, 9, 0, 0, 0});
  RunProgress back = RunProgress::from_json(nlohmann::json::parse(p.to_json().dump()));
  EXPECT_EQ(back.to_json(), p.to_json());
  auto lines = render_progress(p);
  ASSERT_EQ(lines.size(), 4u);  // header, two tasks, total
  EXPECT_NE(lines[1].find("axpy"), std::string::npos);
  EXPECT_NE(lines[1].find("1.08x"), std::string::npos);
  EXPECT_NE(lines[1].find("93.2"), std::string::npos);
  EXPECT_NE(lines[1].find("45.0k"), std::string::npos);
  EXPECT_NE(lines[1].find("(2 running)"), std::string::npos);
  EXPECT_NE(lines[2].find("done: plateau"), std::string::npos);
  EXPECT_NE(lines[3].find("52 candidates"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("$3.50 of $25.00"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("10m00s left"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("for 1h02m"), std::string::npos) << lines[3];
  // A run that stopped has no time left, whatever its last published status said.
  p.state = "finished";
  std::string finished = render_progress(p)[3];
  EXPECT_EQ(finished.find("left"), std::string::npos) << finished;
  EXPECT_NE(finished.find("run 5 finished for 1h02m"), std::string::npos) << finished;
  EXPECT_EQ(format_duration(42), "42s");
}

// A run whose search ended (every task done) while its lane checks the would-be bests says so,
// in the live table and `kopt status`, rather than looking idle; it round-trips through the
// status row, and a stopped run or an empty queue says nothing of it.
TEST(Progress, ARunCheckingWhatItsSearchLeftSaysWhyItGoesOn) {
  RunProgress p;
  p.run_id = 2;
  p.state = "running";
  p.elapsed_seconds = 80;
  p.sanitizer_runs = 1;
  p.sanitizer_pending = 9;
  p.tasks.push_back(
      {"axpy", "done", "every tunable configuration tried", 1.2, 80, 250, 3, 1, 0, 0, 0});
  auto says = [](const RunProgress& q) {
    for (const std::string& line : render_progress(q, 200))
      if (line.find("search done at") != std::string::npos) return line;
    return std::string();
  };
  EXPECT_EQ(says(p), "");
  p.search_done_seconds = 70;
  RunProgress back = RunProgress::from_json(nlohmann::json::parse(p.to_json().dump()));
  ASSERT_TRUE(back.search_done_seconds);
  EXPECT_DOUBLE_EQ(*back.search_done_seconds, 70);
  EXPECT_EQ(says(back),
            "search done at 1m10s: the sanitizer lane checks the 9 provisional best(s) left "
            "before the run ends");
  p.sanitizer_pending = 0;
  EXPECT_EQ(says(p), "");
  p.sanitizer_pending = 9;
  p.state = "finished";
  EXPECT_EQ(says(p), "");
}

// The search's end is said once while the lane checks what it left; a drain's reason still shows.
TEST(Progress, TheSearchsEndIsSaidOnceWhileTheLaneChecks) {
  RunProgress p;
  p.state = "running";
  p.elapsed_seconds = 80;
  p.sanitizer_pending = 3;
  p.stop_reason = "all 1 tasks are done";
  p.tasks.push_back(
      {"axpy", "done", "every tunable configuration tried", 1.2, 80, 250, 3, 1, 0, 0, 0});
  auto stopping_lines = [](const RunProgress& q) {
    int n = 0;
    for (const std::string& line : render_progress(q, 200)) n += line.rfind("stopping: ", 0) == 0;
    return n;
  };
  EXPECT_EQ(stopping_lines(p), 1);  // no check under way: the reason is the only word
  p.search_done_seconds = 70;
  EXPECT_EQ(stopping_lines(p), 0);
  p.state = "draining";
  p.stop_reason = "the time budget (0.03 h) is spent";
  EXPECT_EQ(stopping_lines(p), 1);
}

}  // namespace
}  // namespace kopt::orchestrator
