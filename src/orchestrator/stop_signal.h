// SIGINT and SIGTERM for the daemon. The first signal only sets an atomic flag and writes a
// byte to a self-pipe (both async-signal-safe); the main loop sees the flag, stops taking new
// work and drains. A second signal exits at once with _exit, because whoever sends it has
// decided that waiting is worse than losing the work in flight (which the memory store's
// transactions make safe: everything finished before is already committed).
#pragma once

#include <atomic>
#include <chrono>

namespace kopt::orchestrator {

class StopSignal {
 public:
  // Installs the handlers (once per process) and returns the process-wide instance.
  static StopSignal& install();

  // The instance without installing handlers (tests request stops by hand).
  static StopSignal& instance();

  bool requested() const { return count_.load() > 0; }
  // The signal that asked to stop (SIGINT, SIGTERM), or 0 for request().
  int signal_number() const { return signal_.load(); }
  // Asks to stop as a signal would (used by budgets and tests).
  void request(int signal_number = 0);
  // Waits until a stop is requested or `timeout` passes; true when requested.
  bool wait(std::chrono::milliseconds timeout) const;
  // Clears the request (tests run several daemons in one process).
  void reset();

 private:
  StopSignal();
  static void handle(int signal_number);

  std::atomic<int> count_{0};
  std::atomic<int> signal_{0};
  int pipe_read_ = -1;
  int pipe_write_ = -1;
};

}  // namespace kopt::orchestrator
