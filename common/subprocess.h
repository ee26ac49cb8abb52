// A child process in its own process group, talked to through close-on-exec pipes.
// Used for the sandbox worker, the confined compiler and the `command` LLM provider; the caller
// enforces deadlines with the timed reads below and kills the whole group on expiry. A child
// inherits no descriptor but its pipes and the ones it is handed by name, and may be given a
// scrubbed environment and resource limits, set before it runs a single instruction of its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kopt {

// A setrlimit(2) resource (RLIMIT_AS, RLIMIT_CPU, ...) and the value of both its soft and hard
// limit; `soft` below `hard` where the child should first get a catchable signal (SIGXCPU).
struct ResourceLimit {
  int resource = 0;
  uint64_t hard = 0;
  std::optional<uint64_t> soft;  // nullopt: the same as hard
};

class Subprocess {
 public:
  enum class StderrMode { kInherit, kCapture, kDiscard };

  struct Options {
    StderrMode stderr_mode = StderrMode::kInherit;
    // "NAME=VALUE" entries the child gets instead of this process's environment.
    std::optional<std::vector<std::string>> environment;
    std::vector<ResourceLimit> limits;
    // Descriptors the child keeps besides 0-2, as {descriptor here, number in the child (>= 3)};
    // every other descriptor of this process is closed in the child.
    std::vector<std::pair<int, int>> pass_fds;
  };

  // Starts argv[0] (searched in PATH) with stdin/stdout as pipes.
  static Result<Subprocess> start(const std::vector<std::string>& argv,
                                  StderrMode stderr_mode = StderrMode::kInherit);
  static Result<Subprocess> start(const std::vector<std::string>& argv, const Options& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();  // kills the group and reaps it if still running

  // Writes all of `data` to the child's stdin. Fails when the child closed its end.
  Status write_all(const std::string& data);
  void close_stdin();

  // Reads one line (without '\n') from stdout. nullopt on EOF; an error on deadline, or when the
  // line grows past `max_line_bytes` (what is buffered is dropped: the child broke its protocol).
  Result<std::optional<std::string>> read_line(std::chrono::steady_clock::time_point deadline,
                                               size_t max_line_bytes = SIZE_MAX);

  // Reads stdout (and captured stderr) to EOF or until the deadline.
  Result<std::string> read_all(std::chrono::steady_clock::time_point deadline,
                               size_t max_bytes = 64u << 20);

  const std::string& captured_stderr() const { return stderr_text_; }

  // SIGKILL to the whole process group, then reap.
  void kill_group();
  // `sig` to the child alone (not its group), unless it has been reaped.
  void send_signal(int sig);

  // Waits up to `timeout` for exit. Returns a description like "exit 0" or "signal 9".
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  bool running();
  pid_t pid() const { return pid_; }
  // Raw wait status once reaped.
  std::optional<int> wait_status() const { return wait_status_; }

 private:
  Subprocess() = default;
  void drain_stderr();
  void close_all();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string buffer_;
  std::string stderr_text_;
  std::optional<int> wait_status_;
};

// This process's environment entries whose names are in `names`; a name ending in '*' is a
// prefix ("KOPT_*"). For children that must not see the keys in the daemon's environment.
std::vector<std::string> environment_subset(const std::vector<std::string>& names);

// Describes a wait status: "exit 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

struct CommandOutput {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  bool timed_out = false;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs a command to completion with `input` on stdin, killing its group after `timeout`.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::string& input,
                                  std::chrono::milliseconds timeout);

}  // namespace kopt
