#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>

extern char** environ;

namespace kopt {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A write to a pipe whose reader has exited raises SIGPIPE, which kills any process that has not
// ignored it (kopt's main does; tests and other embedders may not). Blocking SIGPIPE in this
// thread around the write turns it into a plain EPIPE; a SIGPIPE the write left pending is
// consumed before the old mask returns, so it is never delivered late.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_only_);
    sigaddset(&pipe_only_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_only_, &old_mask_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec no_wait{};
        while (sigtimedwait(&pipe_only_, nullptr, &no_wait) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_only_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "status " + std::to_string(status);
}

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv, StderrMode stderr_mode) {
  if (argv.empty()) return make_error("cannot start a process with no arguments");
  int in_pipe[2], out_pipe[2], err_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + strerror(errno));
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return make_error(std::string("pipe: ") + strerror(errno));
  }
  if (stderr_mode == StderrMode::kCapture && ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return make_error(std::string("pipe: ") + strerror(errno));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  if (stderr_mode == StderrMode::kCapture) {
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  } else if (stderr_mode == StderrMode::kDiscard) {
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group so a hang can be ended with one kill of the group; default signal
  // dispositions so the child does not inherit our ignored SIGPIPE.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (err_pipe[1] >= 0) ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    if (err_pipe[0] >= 0) ::close(err_pipe[0]);
    return make_error("cannot start '" + argv[0] + "': " + strerror(rc));
  }
  Subprocess p;
  p.pid_ = pid;
  p.stdin_fd_ = in_pipe[1];
  p.stdout_fd_ = out_pipe[0];
  p.stderr_fd_ = err_pipe[0];
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !wait_status_) kill_group();
    close_all();
    pid_ = std::exchange(other.pid_, -1);
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    stderr_fd_ = std::exchange(other.stderr_fd_, -1);
    buffer_ = std::move(other.buffer_);
    stderr_text_ = std::move(other.stderr_text_);
    wait_status_ = other.wait_status_;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !wait_status_) kill_group();
  close_all();
}

void Subprocess::close_all() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

Status Subprocess::write_all(const std::string& data) {
  if (stdin_fd_ < 0) return make_error("write to child: its stdin is closed");
  SigpipeBlock no_sigpipe;
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(stdin_fd_, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(std::string("write to child: ") + strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  return ok_status();
}

void Subprocess::close_stdin() { close_fd(stdin_fd_); }

void Subprocess::drain_stderr() {
  if (stderr_fd_ < 0) return;
  char buf[4096];
  while (true) {
    pollfd p{stderr_fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n <= 0) {
      close_fd(stderr_fd_);
      return;
    }
    if (stderr_text_.size() < (1u << 20)) stderr_text_.append(buf, static_cast<size_t>(n));
  }
}

Result<std::optional<std::string>> Subprocess::read_line(Clock::time_point deadline,
                                                         size_t max_line_bytes) {
  while (true) {
    size_t nl = buffer_.find('\n');
    if (std::min(nl, buffer_.size()) > max_line_bytes) {
      buffer_.clear();
      return make_error("a line of the child's output exceeds " + std::to_string(max_line_bytes) +
                        " bytes");
    }
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return std::optional<std::string>(std::move(line));
    }
    if (stdout_fd_ < 0) return std::optional<std::string>();
    pollfd fds[2] = {{stdout_fd_, POLLIN, 0}, {stderr_fd_, POLLIN, 0}};
    int rc = ::poll(fds, stderr_fd_ >= 0 ? 2 : 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return make_error(std::string("poll: ") + strerror(errno));
    if (rc == 0) return make_error("deadline passed waiting for the child's output");
    if (stderr_fd_ >= 0 && fds[1].revents) drain_stderr();
    if (fds[0].revents) {
      char buf[65536];
      ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close_fd(stdout_fd_);
        if (buffer_.empty()) return std::optional<std::string>();
        std::string rest = std::move(buffer_);
        buffer_.clear();
        return std::optional<std::string>(std::move(rest));
      }
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
}

Result<std::string> Subprocess::read_all(Clock::time_point deadline, size_t max_bytes) {
  std::string out = std::move(buffer_);
  buffer_.clear();
  while (stdout_fd_ >= 0 || stderr_fd_ >= 0) {
    pollfd fds[2];
    int count = 0;
    if (stdout_fd_ >= 0) fds[count++] = {stdout_fd_, POLLIN, 0};
    if (stderr_fd_ >= 0) fds[count++] = {stderr_fd_, POLLIN, 0};
    int rc = ::poll(fds, static_cast<nfds_t>(count), remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return make_error(std::string("poll: ") + strerror(errno));
    if (rc == 0) return make_error("deadline passed waiting for the child's output");
    for (int i = 0; i < count; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == stderr_fd_) {
        drain_stderr();
        continue;
      }
      char buf[65536];
      ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close_fd(stdout_fd_);
        continue;
      }
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > max_bytes) {
        return make_error("child output exceeds " + std::to_string(max_bytes) + " bytes");
      }
    }
  }
  return out;
}

void Subprocess::kill_group() {
  if (pid_ <= 0 || wait_status_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  wait_status_ = status;
}

void Subprocess::send_signal(int sig) {
  if (pid_ > 0 && !wait_status_) ::kill(pid_, sig);
}

std::optional<int> Subprocess::wait_for(std::chrono::milliseconds timeout) {
  if (wait_status_) return wait_status_;
  auto deadline = Clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      wait_status_ = status;
      return status;
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool Subprocess::running() {
  if (pid_ <= 0) return false;
  return !wait_for(std::chrono::milliseconds(0)).has_value();
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::string& input,
                                  std::chrono::milliseconds timeout) {
  auto child = Subprocess::start(argv, Subprocess::StderrMode::kCapture);
  if (!child) return make_error(child.error());
  auto deadline = Clock::now() + timeout;
  CommandOutput output;
  // Large inputs could fill the pipe while the child fills its stdout: write from a thread.
  std::thread writer([&] {
    (void)child->write_all(input);
    child->close_stdin();
  });
  auto text = child->read_all(deadline);
  if (!text) {
    child->kill_group();
    writer.join();
    output.timed_out = text.error().find("deadline") != std::string::npos;
    if (!output.timed_out) return make_error(text.error());
    output.stderr_text = child->captured_stderr();
    return output;
  }
  writer.join();
  output.stdout_text = std::move(*text);
  output.stderr_text = child->captured_stderr();
  auto status = child->wait_for(std::chrono::milliseconds(remaining_ms(deadline)));
  if (!status) {
    child->kill_group();
    output.timed_out = true;
    return output;
  }
  output.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  return output;
}

}  // namespace kopt
