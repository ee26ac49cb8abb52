// Subprocess and run_command: exit codes, stderr capture, large transfers, and timeouts that
// kill the whole process group.
#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "common/files.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using namespace std::chrono_literals;
using testing::contains;
using testing::TempDir;

CommandOutput run_ok(const std::vector<std::string>& argv, const std::string& input = "",
                     std::chrono::milliseconds timeout = 20s) {
  auto out = run_command(argv, input, timeout);
  EXPECT_TRUE(out.ok()) << out.error();
  return out.ok() ? *out : CommandOutput{};
}

// A process is gone when /proc has no entry for it or it is a zombie waiting for its parent.
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST(RunCommand, ExitCodeStdoutAndStderr) {
  CommandOutput out = run_ok({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.stdout_text, "out\n");
  EXPECT_EQ(out.stderr_text, "err\n");
  EXPECT_EQ(run_ok({"true"}).exit_code, 0);
}

TEST(RunCommand, InputReachesTheChild) {
  CommandOutput out = run_ok({"tr", "a-z", "A-Z"}, "hello\n");
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.stdout_text, "HELLO\n");
}

TEST(RunCommand, LargeInputAndOutputBothWays) {
  // 16 MiB through cat: more than any pipe buffer in both directions at once.
  std::string input;
  input.reserve(16u << 20);
  for (size_t i = 0; input.size() < (16u << 20); ++i) input += std::to_string(i) + "\n";
  CommandOutput out = run_ok({"cat"}, input, 60s);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.stdout_text.size(), input.size());
  EXPECT_TRUE(out.stdout_text == input);
}

TEST(RunCommand, LargeStderrIsCapturedWhileStdoutFlows) {
  CommandOutput out =
      run_ok({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' e >&2; head -c 500000 /dev/zero"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.stdout_text.size(), 500000u);
  EXPECT_EQ(out.stderr_text, std::string(300000, 'e'));
}

TEST(RunCommand, ChildThatIgnoresLargeInputDoesNotKillUs) {
  // The child exits without reading; writing the rest must fail quietly (EPIPE), not raise
  // SIGPIPE in this process (which tests, unlike kopt's main, do not ignore).
  std::string input(8u << 20, 'x');
  CommandOutput out = run_ok({"head", "-c", "5"}, input);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.stdout_text, "xxxxx");
  CommandOutput silent = run_ok({"true"}, input);
  EXPECT_EQ(silent.exit_code, 0);
}

TEST(RunCommand, SignalledChildHasNoExitCode) {
  CommandOutput out = run_ok({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(out.exit_code, -1);
  EXPECT_FALSE(out.timed_out);
}

TEST(RunCommand, MissingProgramIsAnError) {
  auto out = run_command({"/nonexistent/kopt-no-such-program"}, "", 5s);
  if (out.ok()) {
    // posix_spawn may report a missing program as exit 127 from the child instead.
    EXPECT_EQ(out->exit_code, 127);
  } else {
    EXPECT_TRUE(contains(out.error(), "kopt-no-such-program")) << out.error();
  }
  EXPECT_FALSE(run_command({}, "", 5s).ok());
}

TEST(RunCommand, TimeoutKillsTheWholeGroup) {
  TempDir dir;
  auto pid_file = dir / "grandchild.pid";
  auto start = std::chrono::steady_clock::now();
  // The grandchild holds stdout open and would outlive a kill of the shell alone.
  CommandOutput out =
      run_ok({"sh", "-c", "sleep 60 & echo $! > '" + pid_file.string() + "'; echo started; wait"},
             "", 500ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, -1);
  EXPECT_LT(elapsed, 10s);
  auto pid_text = read_file(pid_file);
  ASSERT_TRUE(pid_text.ok()) << pid_text.error();
  pid_t grandchild = std::stoi(*pid_text);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = process_gone(grandchild);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
  if (!gone) ::kill(grandchild, SIGKILL);
}

TEST(RunCommand, TimeoutWhileTheChildIgnoresItsInput) {
  std::string input(8u << 20, 'x');
  CommandOutput out = run_ok({"sleep", "60"}, input, 300ms);
  EXPECT_TRUE(out.timed_out);
}

TEST(Subprocess, LineProtocol) {
  auto child = Subprocess::start({"sh", "-c", "while read line; do echo \"got $line\"; done"});
  ASSERT_TRUE(child.ok()) << child.error();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (const char* word : {"one", "two"}) {
    ASSERT_TRUE(child->write_all(std::string(word) + "\n").ok());
    auto line = child->read_line(deadline);
    ASSERT_TRUE(line.ok()) << line.error();
    ASSERT_TRUE(line->has_value());
    EXPECT_EQ(**line, std::string("got ") + word);
  }
  EXPECT_TRUE(child->running());
  child->close_stdin();
  auto eof = child->read_line(deadline);
  ASSERT_TRUE(eof.ok()) << eof.error();
  EXPECT_FALSE(eof->has_value());
  auto status = child->wait_for(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describe_wait_status(*status), "exit 0");
  EXPECT_FALSE(child->running());
}

TEST(Subprocess, ReadLineDeadlineAndKill) {
  auto child = Subprocess::start({"sleep", "60"});
  ASSERT_TRUE(child.ok()) << child.error();
  auto line = child->read_line(std::chrono::steady_clock::now() + 100ms);
  ASSERT_FALSE(line.ok());
  EXPECT_TRUE(contains(line.error(), "deadline")) << line.error();
  pid_t pid = child->pid();
  child->kill_group();
  ASSERT_TRUE(child->wait_status().has_value());
  EXPECT_TRUE(contains(describe_wait_status(*child->wait_status()), "signal 9"));
  EXPECT_TRUE(process_gone(pid));
}

TEST(Subprocess, LastLineWithoutNewline) {
  auto child = Subprocess::start({"printf", "a\\nb"});
  ASSERT_TRUE(child.ok());
  auto deadline = std::chrono::steady_clock::now() + 10s;
  EXPECT_EQ(**child->read_line(deadline), "a");
  EXPECT_EQ(**child->read_line(deadline), "b");
  EXPECT_FALSE(child->read_line(deadline)->has_value());
}

TEST(Subprocess, DestructorKillsARunningChild) {
  pid_t pid = -1;
  {
    auto child = Subprocess::start({"sleep", "60"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
    Subprocess moved = std::move(*child);  // the moved-from object must not kill it
    EXPECT_TRUE(moved.running());
    EXPECT_EQ(moved.pid(), pid);
  }
  EXPECT_TRUE(process_gone(pid));
}

TEST(Subprocess, WriteToAChildThatExitedFails) {
  auto child = Subprocess::start({"true"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->wait_for(5s).has_value());
  auto status = child->write_all(std::string(1u << 20, 'x'));
  EXPECT_FALSE(status.ok());
}

TEST(Subprocess, StderrModes) {
  auto captured = Subprocess::start({"sh", "-c", "echo problem >&2; echo done"},
                                    Subprocess::StderrMode::kCapture);
  ASSERT_TRUE(captured.ok());
  auto text = captured->read_all(std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(*text, "done\n");
  EXPECT_EQ(captured->captured_stderr(), "problem\n");
  auto discarded = Subprocess::start({"sh", "-c", "echo problem >&2; echo done"},
                                     Subprocess::StderrMode::kDiscard);
  ASSERT_TRUE(discarded.ok());
  auto out = discarded->read_all(std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "done\n");
  EXPECT_EQ(discarded->captured_stderr(), "");
}

TEST(Subprocess, DescribeWaitStatus) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exit 3");
  EXPECT_TRUE(contains(describe_wait_status(SIGKILL), "killed by signal 9")) << SIGKILL;
}

}  // namespace
}  // namespace kopt
