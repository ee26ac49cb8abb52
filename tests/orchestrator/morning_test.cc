// The morning after a night, end to end on the CPU: kopt_test_daemon (`kopt run` with the fake
// evaluator in place of the GPU) runs with a config whose database.path holds the run, while
// another process holds the database's write lock for 6 s; then `kopt status`, `kopt memory
// wins`, `kopt report` and `kopt export` (the real binary, the config through $KOPT_CONFIG, no
// --db) all read that run, agree with each other, lose nothing and overwrite nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::contains;
using kopt::testing::TempDir;
using namespace std::chrono_literals;

class Morning : public ::testing::Test {
 protected:
  Morning() {
    kopt::testing::isolate_environment(dir_.path());
    tasks_ = dir_ / "tasks";
    kopt::testing::copy_task("axpy", tasks_);
    kopt::testing::copy_task("softmax", tasks_);
    // Relative to the config file, as a user writes it.
    kopt::testing::write_text(config_, R"({"database": {"path": "night/memory.db"}})");
  }

  std::filesystem::path db() const { return dir_ / "night" / "memory.db"; }

  // The real kopt with the config through $KOPT_CONFIG and no $KOPT_DB.
  CommandOutput kopt(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "-u", "KOPT_DB", "KOPT_CONFIG=" + config_.string(),
                                     KOPT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = run_command(argv, "", 120s);
    if (!out) throw std::runtime_error(out.error());
    return *out;
  }

  // The daemon in the background, its output in `log`, the config through $KOPT_CONFIG.
  Subprocess start_daemon(const std::vector<std::string>& args, const std::filesystem::path& log,
                          int delay_ms) {
    std::string command = "exec env -u KOPT_DB KOPT_CONFIG='" + config_.string() +
                          "' KOPT_FAKE_DELAY_MS=" + std::to_string(delay_ms) + " '" +
                          KOPT_TEST_DAEMON + "'";
    for (const auto& a : args) command += " '" + a + "'";
    command += " > '" + log.string() + "' 2>&1";
    auto child = Subprocess::start({"/bin/sh", "-c", command}, Subprocess::StderrMode::kInherit);
    if (!child) throw std::runtime_error(child.error());
    child->close_stdin();
    return std::move(*child);
  }

  static int exit_code(Subprocess& child, std::chrono::milliseconds limit) {
    auto status = child.wait_for(limit);
    if (!status) return -1;
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  }

  int64_t count(const std::string& sql) { return kopt::testing::query_count(db(), sql); }

  TempDir dir_;
  std::filesystem::path tasks_;
  std::filesystem::path config_ = dir_ / "config.json";
};

TEST_F(Morning, EveryCommandReadsTheNightAndNothingIsLost) {
  auto log = dir_ / "daemon.log";
  Subprocess daemon =
      start_daemon({"--tasks", tasks_.string(), "--no-display", "--hours", "1"}, log, 300);
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] { return count("SELECT count(*) FROM evaluations") >= 2; }, 60s))
      << *read_file(log);

  // Another process holds the write lock for 6 s, past SQLite's 5 s busy timeout.
  auto holder = run_command(
      {"python3", "-c",
       "import sqlite3, sys, time\n"
       "c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n"
       "c.execute('BEGIN IMMEDIATE')\n"
       "time.sleep(6)\n"
       "c.execute('COMMIT')\n",
       db().string()},
      "", 60s);
  ASSERT_TRUE(holder) << holder.error();
  ASSERT_EQ(holder->exit_code, 0) << holder->stderr_text;

  ASSERT_EQ(exit_code(daemon, 180s), 0) << *read_file(log);
  std::string night = *read_file(log);
  EXPECT_FALSE(contains(night, "could not store")) << night;
  // The start-up echo says the database and the budget this run has, not the defaults.
  EXPECT_TRUE(contains(night, "config: database: " + db().string())) << night;
  EXPECT_TRUE(contains(night, "budgets hours=1,")) << night;
  EXPECT_TRUE(contains(night, "setting: hours 1 (from --hours)")) << night;

  // Nothing judged was lost: every candidate the daemon counted, and each task's baseline, is
  // stored (the daemon's own count is in its last published status).
  auto published = nlohmann::json::parse(
      kopt::testing::query_text(db(), "SELECT status_json FROM daemon_status WHERE run_id = 1"));
  int64_t judged = 0;
  for (const auto& t : published["tasks"]) judged += t.value("candidates", int64_t{0});
  int64_t stored = count("SELECT count(*) FROM evaluations WHERE run_id = 1");
  EXPECT_EQ(stored, judged + 2) << published.dump(2);

  // kopt status: the run, finished, without time left; the candidates the daemon counted (the
  // baselines' own evaluations are not candidates), as the report counts them.
  auto status = kopt({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.stderr_text;
  EXPECT_TRUE(contains(status.stdout_text, "run 1")) << status.stdout_text;
  EXPECT_TRUE(contains(status.stdout_text, "finished")) << status.stdout_text;
  EXPECT_FALSE(contains(status.stdout_text, " left")) << status.stdout_text;
  auto by_id = kopt({"status", "--run", "1", "--json"});
  ASSERT_EQ(by_id.exit_code, 0) << by_id.stderr_text;
  auto json = nlohmann::json::parse(by_id.stdout_text);
  EXPECT_TRUE(json["time_left_seconds"].is_null()) << by_id.stdout_text;
  int64_t status_candidates = 0;
  for (const auto& t : json["tasks"]) status_candidates += t.value("candidates", int64_t{0});
  EXPECT_EQ(status_candidates, judged) << by_id.stdout_text;
  auto missing = kopt({"status", "--run", "7"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.stderr_text, "no run 7 recorded in " + db().string()))
      << missing.stderr_text;

  // kopt report: the same run and the same count.
  auto report_file = dir_ / "report.md";
  auto report = kopt({"report", "--markdown", report_file.string()});
  ASSERT_EQ(report.exit_code, 0) << report.stderr_text;
  std::string markdown = *read_file(report_file);
  EXPECT_TRUE(contains(markdown, "**" + std::to_string(judged) + "** candidates judged"))
      << markdown;
  EXPECT_FALSE(contains(markdown, "GPU: none")) << markdown;

  // kopt memory wins: the tuner's wins of the night.
  auto wins = kopt({"memory", "wins"});
  ASSERT_EQ(wins.exit_code, 0) << wins.stderr_text;
  EXPECT_FALSE(contains(wins.stdout_text, "no wins match")) << wins.stdout_text;

  // kopt export: beside the user's own file, which survives; a kernel file of the user's with
  // the name the export would write is refused, never replaced.
  auto out = dir_ / "export";
  kopt::testing::write_text(out / "NOTES.md", "the user's notes\n");
  auto exported = kopt({"export", "--out", out.string(), "--min-speedup", "0"});
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_text;
  EXPECT_EQ(*read_file(out / "NOTES.md"), "the user's notes\n");
  EXPECT_TRUE(std::filesystem::exists(out / "manifest.json"));
  EXPECT_TRUE(std::filesystem::exists(out / "axpy.cu"));
  auto mine = dir_ / "mine";
  kopt::testing::write_text(mine / "axpy.cu", "// the user's own axpy\n");
  auto refused = kopt({"export", "--out", mine.string(), "--min-speedup", "0"});
  EXPECT_EQ(refused.exit_code, 1) << refused.stderr_text;
  EXPECT_TRUE(contains(refused.stderr_text, (mine / "axpy.cu").string())) << refused.stderr_text;
  EXPECT_EQ(*read_file(mine / "axpy.cu"), "// the user's own axpy\n");

  // A run whose status was never published is still found by its id, from its record.
  auto erase = run_command({"python3", "-c",
                            "import sqlite3, sys\n"
                            "c = sqlite3.connect(sys.argv[1])\n"
                            "c.execute('DELETE FROM daemon_status')\n"
                            "c.commit()\n",
                            db().string()},
                           "", 60s);
  ASSERT_TRUE(erase && erase->exit_code == 0);
  auto recorded = kopt({"status", "--run", "1"});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.stderr_text;
  EXPECT_TRUE(contains(recorded.stdout_text, "run 1")) << recorded.stdout_text;
  EXPECT_TRUE(contains(recorded.stdout_text, "axpy")) << recorded.stdout_text;
}

// A symlink loop among the tasks: the run says it skips it and goes on with the others. --db
// wins over the config's database, and the start-up echo says so.
TEST_F(Morning, ABadEntryAmongTasksIsSkipped) {
  std::filesystem::create_directory_symlink(tasks_ / "loop", tasks_ / "loop");
  auto log = dir_ / "daemon.log";
  auto other = dir_ / "other.db";
  Subprocess daemon = start_daemon({"--tasks", tasks_.string(), "--no-display",
                                    "--candidates-per-task", "2", "--db", other.string()},
                                   log, 0);
  ASSERT_EQ(exit_code(daemon, 180s), 0) << *read_file(log);
  std::string night = *read_file(log);
  EXPECT_TRUE(contains(night, "skipping " + (tasks_ / "loop").string())) << night;
  EXPECT_TRUE(contains(night, "config: database: " + other.string())) << night;
  EXPECT_GE(kopt::testing::query_count(other, "SELECT count(*) FROM evaluations e JOIN tasks t "
                                              "ON t.id = e.task_id WHERE t.name = 'softmax'"),
            1);
  EXPECT_FALSE(std::filesystem::exists(db()));
}

}  // namespace
}  // namespace kopt::orchestrator
