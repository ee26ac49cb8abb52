#include "src/orchestrator/stop_signal.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <mutex>

namespace kopt::orchestrator {

namespace {

StopSignal* g_instance = nullptr;

}  // namespace

StopSignal::StopSignal() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    pipe_read_ = fds[0];
    pipe_write_ = fds[1];
  }
}

StopSignal& StopSignal::instance() {
  static StopSignal signal;
  g_instance = &signal;
  return signal;
}

StopSignal& StopSignal::install() {
  StopSignal& signal = instance();
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = &StopSignal::handle;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  });
  return signal;
}

void StopSignal::handle(int signal_number) {
  StopSignal* self = g_instance;
  if (!self) return;
  if (self->count_.fetch_add(1) > 0) {
    static const char kMessage[] = "\nkopt: second signal, exiting at once\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(128 + signal_number);
  }
  self->signal_.store(signal_number);
  char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(self->pipe_write_, &byte, 1);
}

void StopSignal::request(int signal_number) {
  signal_.store(signal_number);
  count_.fetch_add(1);
  char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(pipe_write_, &byte, 1);
}

bool StopSignal::wait(std::chrono::milliseconds timeout) const {
  if (requested()) return true;
  pollfd fd{pipe_read_, POLLIN, 0};
  ::poll(&fd, 1, static_cast<int>(timeout.count()));
  return requested();
}

void StopSignal::reset() {
  char buffer[64];
  while (::read(pipe_read_, buffer, sizeof buffer) > 0) {
  }
  count_.store(0);
  signal_.store(0);
}

}  // namespace kopt::orchestrator
