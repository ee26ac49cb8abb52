// `kopt run --resume` continues what was unfinished and nothing else (issue 37): a finished run
// has nothing to resume and makes no LLM call, a task parked before the resume stays parked, and
// task folders queued by `kopt submit` are said before they are taken. Also: a task folder the
// run refuses at start is part of `kopt status` (text and --json) with its reason. The daemon is
// kopt_test_daemon (`kopt run` with the fake evaluator), the model the fake LLM server replaying
// tests/orchestrator/replay/. And two databases in one folder keep their own run logs.
#include <gtest/gtest.h>

#include <fstream>

#include "common/files.h"
#include "common/subprocess.h"
#include "memory_store/sqlite_database.h"
#include "src/orchestrator/progress.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::contains;
using kopt::testing::TempDir;
using namespace std::chrono_literals;

class ResumeTest : public ::testing::Test {
 protected:
  ResumeTest() {
    kopt::testing::isolate_environment(dir_.path());
    ::unsetenv("KOPT_FAKE_DELAY_MS");
    tasks_ = dir_ / "tasks";
    kopt::testing::copy_task("axpy", tasks_);
    kopt::testing::copy_task("softmax", tasks_);
  }

  std::filesystem::path db() const { return dir_ / "memory.db"; }

  CommandOutput daemon(std::vector<std::string> extra) {
    std::vector<std::string> argv = {KOPT_TEST_DAEMON, "--db", db().string(), "--no-display"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto out = run_command(argv, "", 180s);
    if (!out) throw std::runtime_error(out.error());
    return *out;
  }

  CommandOutput kopt(std::vector<std::string> args) {
    args.push_back("--db");
    args.push_back(db().string());
    return kopt::testing::run_kopt(args, dir_ / "cache");
  }

  int64_t count(const std::string& sql) { return kopt::testing::query_count(db(), sql); }

  // A replayed model, one job at a time (the replay cursors stay per task and agent).
  void start_model() {
    kopt::testing::FakeLlmServer::Options options;
    options.replay_dir = std::filesystem::path(KOPT_SOURCE_DIR) / "tests/orchestrator/replay";
    auto server = kopt::testing::FakeLlmServer::start(options);
    ASSERT_TRUE(server) << server.error();
    server_ = std::move(*server);
    config_ = kopt::testing::write_llm_config(
        dir_.path(), server_->openai_base_url(),
        {{"max_in_flight", 1}, {"stall", {{"backoff_initial_s", 0.2}, {"backoff_max_s", 1}}}});
  }

  // Marks run 1 interrupted and rewrites what it published last, as a daemon that stopped at that
  // moment left it.
  void edit_published_state(const std::function<void(nlohmann::json&)>& edit) {
    auto database = sql::Database::open(db(), {});
    ASSERT_TRUE(database) << database.error();
    ASSERT_TRUE(database->execute("UPDATE runs SET status = 'interrupted' WHERE id = 1"));
    auto text = database->query_text("SELECT status_json FROM daemon_status WHERE run_id = 1");
    ASSERT_TRUE(text) << text.error();
    auto json = nlohmann::json::parse(*text);
    edit(json);
    auto update = database->cached("UPDATE daemon_status SET status_json = ?1 WHERE run_id = 1");
    update->bind(1, json.dump());
    ASSERT_TRUE(update->run());
  }

  TempDir dir_;
  std::filesystem::path tasks_;
  std::unique_ptr<kopt::testing::FakeLlmServer> server_;
  std::filesystem::path config_;
};

TEST_F(ResumeTest, AFinishedRunHasNothingToResumeAndCallsNoModel) {
  start_model();
  auto first = daemon(
      {"--tasks", tasks_.string(), "--config", config_.string(), "--candidates-per-task", "4"});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  ASSERT_TRUE(contains(first.stdout_text, "finished")) << first.stdout_text;
  size_t calls = server_->request_count();
  int64_t evaluations = count("SELECT count(*) FROM evaluations");
  ASSERT_GT(calls, 0u);

  auto resumed = daemon({"--resume", "--config", config_.string()});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_TRUE(contains(resumed.stdout_text, "nothing to resume")) << resumed.stdout_text;
  EXPECT_EQ(server_->request_count(), calls);
  EXPECT_EQ(count("SELECT count(*) FROM evaluations"), evaluations);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
}

TEST_F(ResumeTest, ATaskParkedBeforeTheResumeStaysParked) {
  start_model();
  auto first = daemon(
      {"--tasks", tasks_.string(), "--config", config_.string(), "--candidates-per-task", "4"});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  // As a daemon interrupted after both tasks were parked (the model stalled on them) leaves it.
  edit_published_state([](nlohmann::json& j) {
    j["state"] = "interrupted";
    for (auto& task : j["tasks"]) {
      task["state"] = "parked";
      task["note"] = "stalled: 5 of the last 6 calls wrote no new kernel";
    }
  });
  size_t calls = server_->request_count();

  // A larger candidate budget would let the model go on, if the tasks were not parked.
  auto resumed = daemon({"--resume", "--config", config_.string(), "--candidates-per-task", "40"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_TRUE(contains(resumed.stderr_text, "resuming run 1")) << resumed.stderr_text;
  EXPECT_TRUE(contains(resumed.stderr_text, "[axpy] stays parked as before the resume"))
      << resumed.stderr_text;
  EXPECT_EQ(server_->request_count(), calls);

  auto status = kopt({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.stderr_text;
  auto json = nlohmann::json::parse(status.stdout_text);
  ASSERT_EQ(json["tasks"].size(), 2u);
  for (const auto& task : json["tasks"]) {
    EXPECT_EQ(task["state"], "parked") << task.dump();
    EXPECT_EQ(task["note"], "stalled: 5 of the last 6 calls wrote no new kernel");
    EXPECT_GT(task["llm_calls"].get<int64_t>(), 0) << "the calls before the resume count";
  }
}

TEST_F(ResumeTest, SubmittedTasksAreSaidThenTaken) {
  auto first = daemon({"--tasks", (tasks_ / "axpy").string(), "--candidates-per-task", "3"});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  int64_t axpy = count("SELECT count(*) FROM evaluations");
  auto submit = kopt({"submit", (tasks_ / "softmax").string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.stderr_text;

  auto resumed = daemon({"--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_TRUE(contains(
      resumed.stderr_text,
      "1 task folder(s) queued by `kopt submit` join run 1:\n  " + (tasks_ / "softmax").string()))
      << resumed.stderr_text;
  EXPECT_GT(count("SELECT count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id "
                  "WHERE t.name = 'softmax'"),
            0);
  // axpy was done: not one more evaluation of it.
  EXPECT_EQ(count("SELECT count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id "
                  "WHERE t.name = 'axpy'"),
            axpy);
}

TEST_F(ResumeTest, ATaskRefusedAtStartIsInTheStatusWithItsReason) {
  auto broken = kopt::testing::copy_task("softmax", dir_ / "more");
  auto text = read_file(broken / "task.json");
  ASSERT_TRUE(text);
  std::string edited = *text;
  edited.replace(edited.find("\"tolerance\""), 11, "\"tolerence\"");
  // Renamed so that the name is not softmax's (the duplicate is another refusal).
  edited.replace(edited.find("\"softmax\""), 9, "\"softmax2\"");
  kopt::testing::write_text(broken / "task.json", edited);
  std::filesystem::rename(broken, tasks_ / "softmax2");

  auto run = daemon({"--tasks", tasks_.string(), "--candidates-per-task", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  // One log line per refusal: the reason's own lines joined, never a literal "\n".
  EXPECT_FALSE(contains(run.stderr_text, "\\n")) << run.stderr_text;

  auto status = kopt({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.stderr_text;
  auto json = nlohmann::json::parse(status.stdout_text);
  ASSERT_EQ(json["refused"].size(), 1u) << json.dump(2);
  EXPECT_EQ(json["refused"][0]["dir"], (tasks_ / "softmax2").string());
  EXPECT_TRUE(contains(json["refused"][0]["reason"].get<std::string>(), "tolerence"))
      << json["refused"][0].dump();
  auto table = kopt({"status"});
  EXPECT_TRUE(contains(table.stdout_text, "softmax2")) << table.stdout_text;
  EXPECT_TRUE(contains(table.stdout_text, "refused: ")) << table.stdout_text;
  EXPECT_TRUE(contains(table.stdout_text, "1 refused")) << table.stdout_text;
  auto report = kopt({"report", "--markdown", (dir_ / "report.md").string()});
  ASSERT_EQ(report.exit_code, 0) << report.stderr_text;
  auto markdown = read_file(dir_ / "report.md");
  ASSERT_TRUE(markdown);
  EXPECT_TRUE(contains(*markdown, "**" + (tasks_ / "softmax2").string() + "** was refused: "))
      << *markdown;
}

TEST_F(ResumeTest, StatusWatchRedrawsUntilTheDaemonStops) {
  ::setenv("KOPT_FAKE_DELAY_MS", "300", 1);
  auto child =
      Subprocess::start({KOPT_TEST_DAEMON, "--db", db().string(), "--no-display", "--tasks",
                         (tasks_ / "axpy").string(), "--candidates-per-task", "6"},
                        Subprocess::StderrMode::kCapture);
  ::unsetenv("KOPT_FAKE_DELAY_MS");
  ASSERT_TRUE(child) << child.error();
  child->close_stdin();
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] { return count("SELECT count(*) FROM daemon_status") >= 1; }, 60s));
  auto watched = kopt({"status", "--watch", "--every", "0.2"});
  EXPECT_EQ(watched.exit_code, 0) << watched.stderr_text;
  size_t draws = 0;
  for (size_t at = watched.stdout_text.find("total: "); at != std::string::npos;
       at = watched.stdout_text.find("total: ", at + 1)) {
    ++draws;
  }
  EXPECT_GE(draws, 2u) << watched.stdout_text;
  EXPECT_TRUE(contains(watched.stdout_text, "the daemon is not running: --watch stops"))
      << watched.stdout_text;
  (void)child->wait_for(30s);
  auto bad = kopt({"status", "--watch", "--every", "0"});
  EXPECT_EQ(bad.exit_code, 2);
}

TEST_F(ResumeTest, CompareShowsTwoRunsSideBySide) {
  auto first = daemon({"--tasks", (tasks_ / "axpy").string(), "--candidates-per-task", "2"});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  auto second = daemon({"--tasks", tasks_.string(), "--candidates-per-task", "3"});
  ASSERT_EQ(second.exit_code, 0) << second.stderr_text;
  auto json_out = kopt({"compare", "1", "2", "--json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.stderr_text;
  auto j = nlohmann::json::parse(json_out.stdout_text);
  ASSERT_EQ(j["tasks"].size(), 2u) << j.dump(2);
  for (const auto& row : j["tasks"]) {
    if (row["task"] == "axpy") {
      EXPECT_EQ(row["a"]["candidates"], 2) << row.dump();
      // Run 2 pays for nothing run 1 judged (the search carried across nights): of axpy's three
      // tuner configurations, run 1's budget of 2 judged two, so run 2 judges the third, and
      // re-verifies run 1's best once on purpose (the warm start) where that best is not the
      // baseline. Which two run 1 judged depends on how its parallel jobs were claimed (on a
      // loaded machine the two slower ones, and then its best is the baseline).
      bool warm_start = row["a"]["best_speedup"].get<double>() > 1.0;
      EXPECT_EQ(row["b"]["candidates"], warm_start ? 2 : 1) << row.dump();
      EXPECT_TRUE(row["a"]["best_speedup"].is_number());
    } else {
      EXPECT_TRUE(row["a"].is_null()) << "softmax was not in run 1: " << row.dump();
    }
  }
  // The status of each run says the same candidates (one definition, one query).
  auto status = nlohmann::json::parse(kopt({"status", "--run", "1", "--json"}).stdout_text);
  EXPECT_EQ(status["tasks"][0]["candidates"], 2);
  auto table = kopt({"compare", "1", "2"});
  EXPECT_TRUE(contains(table.stdout_text, "(not in run)")) << table.stdout_text;
  EXPECT_EQ(kopt({"compare", "1"}).exit_code, 2);
  EXPECT_EQ(kopt({"compare", "1", "9"}).exit_code, 1);
}

TEST(StatusTable, ReasonsAreCutAtWordBoundaries) {
  EXPECT_EQ(fit_words("stalled: 18 of the last 20 coder answers were repeats", 30),
            "stalled: 18 of the last 20...");
  EXPECT_EQ(fit_words("short enough", 30), "short enough");
  EXPECT_EQ(fit_words("averyveryverylongwordwithoutspaces", 12), "averyvery...");
  RunProgress p;
  TaskProgress t;
  t.name = "softmax";
  t.state = "parked";
  t.note = "stalled: 18 of the last 20 coder answers were repeats of judged kernels";
  p.tasks.push_back(t);
  for (const std::string& line : render_progress(p, 90)) {
    EXPECT_LE(line.size(), 90u) << line;
    if (line.rfind("softmax", 0) == 0) {
      EXPECT_EQ(line.substr(line.size() - 3), "...") << line;
      EXPECT_EQ(line[line.size() - 4] == ' ', false) << line;
      std::string before = line.substr(0, line.size() - 3);
      EXPECT_TRUE(t.note.find(before.substr(before.rfind(' ') + 1) + " ") != std::string::npos)
          << "cut inside a word: " << line;
    }
  }
}

TEST_F(ResumeTest, TwoDatabasesInOneFolderKeepTheirOwnRunLogs) {
  for (const char* name : {"night.db", "night-b.db"}) {
    std::vector<std::string> argv = {KOPT_TEST_DAEMON,        "--db",    (dir_ / name).string(),
                                     "--no-display",          "--tasks", (tasks_ / "axpy").string(),
                                     "--candidates-per-task", "1"};
    auto out = run_command(argv, "", 120s);
    ASSERT_TRUE(out);
    ASSERT_EQ(out->exit_code, 0) << out->stderr_text;
  }
  auto first = read_file(dir_ / "runs/night/1/kopt.log");
  auto second = read_file(dir_ / "runs/night-b/1/kopt.log");
  ASSERT_TRUE(first) << first.error();
  ASSERT_TRUE(second) << second.error();
  EXPECT_TRUE(contains(*first, (dir_ / "night.db").string()));
  EXPECT_FALSE(contains(*first, (dir_ / "night-b.db").string()));
  EXPECT_TRUE(contains(*second, (dir_ / "night-b.db").string()));
}

}  // namespace
}  // namespace kopt::orchestrator
