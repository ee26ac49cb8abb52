// The daemon as a process: kopt_test_daemon is `kopt run` with the fake evaluator in place of
// the GPU. Signals, kill -9 and --resume, the one-daemon lock, `kopt status` and `kopt submit`
// from another process, prompts refused at start, and the whole loop against the fake LLM
// server replaying real kernels (tests/orchestrator/replay/).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "sandbox/cuda_driver.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::orchestrator {
namespace {

using kopt::testing::TempDir;
using namespace std::chrono_literals;

class DaemonProcessTest : public ::testing::Test {
 protected:
  DaemonProcessTest() {
    kopt::testing::isolate_environment(dir_.path());
    ::unsetenv("KOPT_FAKE_DELAY_MS");
    tasks_ = dir_ / "tasks";
    kopt::testing::copy_task("axpy", tasks_);
    kopt::testing::copy_task("softmax", tasks_);
  }

  std::filesystem::path db() const { return dir_ / "memory.db"; }

  std::vector<std::string> daemon_args(std::vector<std::string> extra) {
    std::vector<std::string> argv = {KOPT_TEST_DAEMON, "--db", db().string(), "--no-display"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  Subprocess start(std::vector<std::string> extra, int delay_ms = 0) {
    ::setenv("KOPT_FAKE_DELAY_MS", std::to_string(delay_ms).c_str(), 1);
    auto child = Subprocess::start(daemon_args(std::move(extra)), Subprocess::StderrMode::kCapture);
    ::unsetenv("KOPT_FAKE_DELAY_MS");
    if (!child) throw std::runtime_error(child.error());
    child->close_stdin();
    return std::move(*child);
  }

  // Runs the daemon to completion; output is stdout and stderr.
  CommandOutput run(std::vector<std::string> extra, std::chrono::seconds limit = 120s) {
    auto out = run_command(daemon_args(std::move(extra)), "", limit);
    if (!out) throw std::runtime_error(out.error());
    return *out;
  }

  int64_t count(const std::string& sql) { return kopt::testing::query_count(db(), sql); }
  int64_t evaluations() { return count("SELECT count(*) FROM evaluations"); }

  // The exit status of `child` within `limit`, or -1 when it is still running.
  static int exit_status(Subprocess& child, std::chrono::milliseconds limit) {
    (void)child.read_all(std::chrono::steady_clock::now() + limit);
    auto status = child.wait_for(limit);
    if (!status) return -1;
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  }

  TempDir dir_;
  std::filesystem::path tasks_;
};

TEST_F(DaemonProcessTest, TheTunerRunsWithoutAnyLlmOrConfig) {
  auto out = run({"--tasks", tasks_.string()});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out.stderr_text, "no LLM configured")) << out.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out.stdout_text, "finished: all 2 tasks are done"))
      << out.stdout_text;
  EXPECT_EQ(evaluations(), 8);  // two baselines and three BLOCK values each
  EXPECT_EQ(count("SELECT count(*) FROM llm_calls"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM pairs"), 2);
  // The run's log is in its folder.
  auto log = read_file(dir_ / "runs/memory/1/kopt.log");
  ASSERT_TRUE(log) << log.error();
  EXPECT_TRUE(kopt::testing::contains(*log, "[axpy] tuner BLOCK=512: ok 1.100x"));
}

TEST_F(DaemonProcessTest, TheRealKoptRunSaysOnceThatItNeedsAGpu) {
  // The product binary with its real workers: on a machine without a driver (CI) it refuses in
  // one line before recording a run; with a GPU there is nothing to refuse.
  if (load_cuda_driver().ok()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  auto out = run_command(
      {KOPT_BINARY, "run", "--tasks", tasks_.string(), "--db", db().string(), "--no-display"}, "",
      60s);
  ASSERT_TRUE(out) << out.error();
  EXPECT_EQ(out->exit_code, 3) << out->stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out->stderr_text, "kopt run: no NVIDIA driver"))
      << out->stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out->stderr_text, "this command needs a GPU"));
  EXPECT_TRUE(kopt::testing::contains(out->stderr_text, "daemon.worker_command"));
  EXPECT_FALSE(kopt::testing::contains(out->stderr_text, "[axpy]")) << out->stderr_text;
  // Nothing recorded and nothing left behind: the database it created is removed with its lock.
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(DaemonProcessTest, SigtermDrainsStoresAndExitsZero) {
  Subprocess daemon = start({"--tasks", tasks_.string(), "--gpus", "0,1"}, 400);
  ASSERT_TRUE(kopt::testing::wait_until([&] { return evaluations() >= 2; }, 60s));
  ASSERT_EQ(::kill(daemon.pid(), SIGTERM), 0);
  int status = exit_status(daemon, 30s);
  EXPECT_EQ(status, 0) << daemon.captured_stderr();
  EXPECT_TRUE(kopt::testing::contains(daemon.captured_stderr(), "interrupted by SIGTERM"));
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
  int64_t stored = evaluations();
  EXPECT_GE(stored, 2);
  EXPECT_LT(stored, 8);
}

TEST_F(DaemonProcessTest, ASecondSignalExitsAtOnce) {
  Subprocess daemon = start({"--tasks", tasks_.string()}, 20000);
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] { return count("SELECT count(*) FROM daemon_status") >= 1; }, 60s));
  ASSERT_EQ(::kill(daemon.pid(), SIGTERM), 0);
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(::kill(daemon.pid(), SIGTERM), 0);
  auto start = std::chrono::steady_clock::now();
  int status = exit_status(daemon, 10s);
  EXPECT_EQ(status, 128 + SIGTERM) << daemon.captured_stderr();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(kopt::testing::contains(daemon.captured_stderr(), "second signal"));
}

TEST_F(DaemonProcessTest, KillNineThenResumeLosesNothingAndRedoesNothing) {
  Subprocess daemon = start({"--tasks", tasks_.string(), "--hours", "1"}, 300);
  ASSERT_TRUE(kopt::testing::wait_until([&] { return evaluations() >= 3; }, 60s));
  daemon.kill_group();  // SIGKILL: no handler runs, nothing is flushed by the daemon
  int64_t before = evaluations();
  std::string ids_before = kopt::testing::query_text(
      db(), "SELECT group_concat(id || ':' || kernel_id, ',') FROM evaluations ORDER BY id");
  ASSERT_GE(before, 3);
  ASSERT_LT(before, 8);

  auto resumed = run({"--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(resumed.stderr_text, "resuming run 1"));
  // The budget the run began with goes on, and the start-up says where it came from.
  EXPECT_TRUE(kopt::testing::contains(resumed.stderr_text, "setting: hours 1 (from the saved run)"))
      << resumed.stderr_text;
  EXPECT_EQ(evaluations(), 8);
  EXPECT_EQ(count("SELECT count(DISTINCT kernel_id) FROM evaluations"), 8);  // nothing twice
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
  std::string ids_after = kopt::testing::query_text(
      db(), "SELECT group_concat(id || ':' || kernel_id, ',') FROM evaluations WHERE id <= " +
                std::to_string(before) + " ORDER BY id");
  EXPECT_EQ(ids_after, ids_before);
}

TEST_F(DaemonProcessTest, OneDaemonPerDatabase) {
  Subprocess first = start({"--tasks", tasks_.string()}, 2000);
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] { return count("SELECT count(*) FROM daemon_status") >= 1; }, 60s));
  auto second = run({"--tasks", tasks_.string()}, 30s);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_TRUE(kopt::testing::contains(
      second.stderr_text,
      "already running on " + db().string() + " (pid " + std::to_string(first.pid()) + ")"))
      << second.stderr_text;
  ::kill(first.pid(), SIGTERM);
  EXPECT_EQ(exit_status(first, 30s), 0);
}

TEST_F(DaemonProcessTest, StatusAndSubmitFromAnotherShell) {
  Subprocess daemon = start({"--tasks", (tasks_ / "axpy").string()}, 700);
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] { return count("SELECT count(*) FROM daemon_status") >= 1; }, 60s));
  auto status =
      kopt::testing::run_kopt({"status", "--db", db().string(), "--json"}, dir_ / "cache");
  ASSERT_EQ(status.exit_code, 0) << status.stderr_text;
  auto json = nlohmann::json::parse(status.stdout_text);
  EXPECT_EQ(json["run_id"], 1);
  EXPECT_EQ(json["daemon_running"], true);
  EXPECT_EQ(json["pid"], daemon.pid());
  EXPECT_EQ(json["mode"], "tuner");
  ASSERT_EQ(json["tasks"].size(), 1u);
  EXPECT_EQ(json["tasks"][0]["name"], "axpy");

  auto submit = kopt::testing::run_kopt(
      {"submit", (tasks_ / "softmax").string(), "--db", db().string()}, dir_ / "cache");
  ASSERT_EQ(submit.exit_code, 0) << submit.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(submit.stdout_text, "submitted softmax"));
  ASSERT_TRUE(kopt::testing::wait_until(
      [&] {
        return count(
                   "SELECT count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id WHERE "
                   "t.name = 'softmax'") >= 1;
      },
      60s));
  ::kill(daemon.pid(), SIGINT);
  EXPECT_EQ(exit_status(daemon, 30s), 0) << daemon.captured_stderr();

  auto after = kopt::testing::run_kopt({"status", "--db", db().string()}, dir_ / "cache");
  ASSERT_EQ(after.exit_code, 0) << after.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(after.stdout_text, "softmax")) << after.stdout_text;
  EXPECT_TRUE(kopt::testing::contains(after.stdout_text, "run 1 interrupted")) << after.stdout_text;

  auto bad = kopt::testing::run_kopt({"submit", (dir_ / "nowhere").string(), "--db", db().string()},
                                     dir_ / "cache");
  EXPECT_EQ(bad.exit_code, 2);
}

using kopt::testing::write_llm_config;

TEST_F(DaemonProcessTest, PromptsWithBadPlaceholdersAreRefusedBeforeAnyWork) {
  auto prompts = dir_ / "prompts";
  std::filesystem::copy(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts", prompts);
  std::ofstream(prompts / "coder.txt", std::ios::app) << "Mind {{the_plan}}.\n";
  auto config =
      write_llm_config(dir_.path(), "http://127.0.0.1:9/v1", {{"prompts_dir", prompts.string()}});
  auto out = run({"--tasks", tasks_.string(), "--config", config.string()});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(kopt::testing::contains(out.stderr_text, (prompts / "coder.txt").string() + ":"))
      << out.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out.stderr_text, "unknown placeholder {{the_plan}}"))
      << out.stderr_text;
  // Refused before any work: the database it created is removed again.
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(DaemonProcessTest, TheWholeLoopWithTheReplayedLlm) {
  kopt::testing::FakeLlmServer::Options options;
  options.replay_dir = std::filesystem::path(KOPT_SOURCE_DIR) / "tests/orchestrator/replay";
  auto server = kopt::testing::FakeLlmServer::start(options);
  ASSERT_TRUE(server) << server.error();
  // One job at a time; the server gives each task and agent (model) its own replay cursor.
  // The replayed planner repeats its plans once it has cycled: back off for a test's time.
  auto config = write_llm_config(
      dir_.path(), (*server)->openai_base_url(),
      {{"max_in_flight", 1}, {"stall", {{"backoff_initial_s", 0.2}, {"backoff_max_s", 1}}}});
  auto out =
      run({"--tasks", tasks_.string(), "--config", config.string(), "--candidates-per-task", "14"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(kopt::testing::contains(out.stdout_text, "finished")) << out.stdout_text;
  EXPECT_GT((*server)->request_count(), 3u);

  // Every call is accounted, with tokens and cost, in the run's LLM-call table.
  EXPECT_EQ(count("SELECT count(*) FROM llm_calls"),
            static_cast<int64_t>((*server)->request_count()));
  EXPECT_GT(count("SELECT sum(prompt_tokens) FROM llm_calls WHERE run_id = 1"), 0);
  // Known-good kernels were verified for both tasks, known-bad ones rejected and remembered.
  for (const char* kernel : {"axpy_vec4(", "softmax_online("}) {
    EXPECT_GE(count(std::string("SELECT count(*) FROM evaluations e JOIN kernels k ON k.id = "
                                "e.kernel_id WHERE e.verdict = 'ok' AND k.origin_agent = 'coder' "
                                "AND k.source LIKE '%") +
                    kernel + "%'"),
              1)
        << kernel << "\n"
        << out.stderr_text;
  }
  EXPECT_GE(count("SELECT count(*) FROM evaluations WHERE verdict = 'compile_error'"), 1);
  EXPECT_GE(count("SELECT count(*) FROM evaluations WHERE verdict IN ('incorrect', "
                  "'out_of_bounds', 'invalid_plan')"),
            1);
  // The summarizer's lessons (from the replayed answers) are stored with coder pairs.
  EXPECT_GE(count("SELECT count(*) FROM pairs p JOIN kernels k ON k.id = p.fast_kernel_id WHERE "
                  "k.origin_agent = 'coder' AND p.summary <> '' AND p.summary NOT LIKE "
                  "'A rewrite of%'"),
            1);
  EXPECT_GE(count("SELECT count(*) FROM kernels WHERE origin_model = 'replay-coder'"), 1);
}

}  // namespace
}  // namespace kopt::orchestrator
