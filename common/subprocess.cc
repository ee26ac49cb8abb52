#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
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


// Both ends of a close-on-exec pipe, closed on scope exit unless taken.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end = fds[0];
    write_end = fds[1];
    return true;
  }
  void close_read() { close_fd(read_end); }
  void close_write() { close_fd(write_end); }
  ~Pipe() {
    close_read();
    close_write();
  }
};

// argv[0] as execve wants it: a name without '/' searched in this process's PATH.
Result<std::string> find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return make_error(strerror(ENOENT));
}

// What the forked child does before exec, prepared by the parent.
struct ChildPlan {
  const char* program = nullptr;
  std::vector<char*> args;
  std::vector<char*> env;
  std::vector<std::pair<int, int>> moves;  // {descriptor now, number after exec}
  bool discard_stderr = false;
  std::vector<ResourceLimit> limits;
  int error_fd = -1;
};

[[noreturn]] void child_failed(int error_fd) {
  int e = errno;
  ssize_t ignored = ::write(error_fd, &e, sizeof e);
  (void)ignored;
  ::_exit(127);
}

// Marks every descriptor from `first` on close-on-exec except the targets of `moves`.
void close_others_at_exec(const std::vector<std::pair<int, int>>& moves, int first) {
  int kept[64];
  size_t count = 0;
  for (const auto& move : moves)
    if (move.second >= first && count < 64) kept[count++] = move.second;
  std::sort(kept, kept + count);
  unsigned int from = static_cast<unsigned int>(first);
  for (size_t i = 0; i <= count; ++i) {
    unsigned int to = i < count ? static_cast<unsigned int>(kept[i]) : ~0u;
    if (to > from && ::syscall(SYS_close_range, from, to - 1, CLOSE_RANGE_CLOEXEC) != 0) {
      // Kernels before 5.11: mark them one by one, up to the descriptor limit.
      rlimit nofile{};
      ::getrlimit(RLIMIT_NOFILE, &nofile);
      unsigned int last = static_cast<unsigned int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 16));
      for (unsigned int fd = from; fd < std::min(to, last); ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (i < count) from = static_cast<unsigned int>(kept[i]) + 1;
  }
}

// In the forked child: async-signal-safe calls only.
[[noreturn]] void run_child(const ChildPlan& plan, char* const* env) {
  // Own process group so a hang can be ended with one kill of the group.
  ::setpgid(0, 0);
  // Default dispositions and no blocked signal: the child must not inherit our ignored SIGPIPE
  // or a mask that keeps SIGTERM from it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Every source first moves above every target, so no dup2 overwrites a later source.
  int high = 3;
  for (const auto& [from, to] : plan.moves) high = std::max({high, from + 1, to + 1});
  int staged[64];
  size_t count = std::min<size_t>(plan.moves.size(), 64);
  for (size_t i = 0; i < count; ++i) {
    staged[i] = ::fcntl(plan.moves[i].first, F_DUPFD_CLOEXEC, high);
    if (staged[i] < 0) child_failed(plan.error_fd);
  }
  for (size_t i = 0; i < count; ++i) {
    if (::dup2(staged[i], plan.moves[i].second) < 0) child_failed(plan.error_fd);
  }
  if (plan.discard_stderr) {
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0 || ::dup2(null, 2) < 0) child_failed(plan.error_fd);
  }
  close_others_at_exec(plan.moves, 3);
  for (const auto& limit : plan.limits) {
    // A limit only ever lowers: above the current hard limit setrlimit would fail (EPERM).
    rlimit current{};
    if (::getrlimit(limit.resource, &current) != 0) child_failed(plan.error_fd);
    rlim_t hard = std::min(static_cast<rlim_t>(limit.hard), current.rlim_max);
    rlim_t soft = std::min(static_cast<rlim_t>(limit.soft.value_or(limit.hard)), hard);
    rlimit value{soft, hard};
    if (::setrlimit(limit.resource, &value) != 0) child_failed(plan.error_fd);
  }
  ::execve(plan.program, plan.args.data(), env);
  child_failed(plan.error_fd);
}
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
  Options options;
  options.stderr_mode = stderr_mode;
  return start(argv, options);
}

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv, const Options& options) {
  if (argv.empty()) return make_error("cannot start a process with no arguments");
  if (options.pass_fds.size() > 32) return make_error("cannot pass more than 32 descriptors");
  for (const auto& [from, to] : options.pass_fds) {
    if (from < 0 || to < 3) return make_error("cannot pass descriptor " + std::to_string(from) +
                                              " as " + std::to_string(to) + " (must be >= 3)");
  }
  auto program = find_executable(argv[0]);
  if (!program) return make_error("cannot start '" + argv[0] + "': " + program.error());
  Pipe in, out, err, exec_error;
  if (!in.open() || !out.open() || !exec_error.open() ||
      (options.stderr_mode == StderrMode::kCapture && !err.open()))
    return make_error(std::string("pipe: ") + strerror(errno));

  // Everything the child needs is built here: between fork and exec it may only make
  // async-signal-safe calls (another thread could hold the allocator's lock).
  ChildPlan plan;
  plan.program = program->c_str();
  for (const auto& a : argv) plan.args.push_back(const_cast<char*>(a.c_str()));
  plan.args.push_back(nullptr);
  if (options.environment) {
    for (const auto& e : *options.environment) plan.env.push_back(const_cast<char*>(e.c_str()));
    plan.env.push_back(nullptr);
  }
  plan.moves = {{in.read_end, 0}, {out.write_end, 1}};
  if (options.stderr_mode == StderrMode::kCapture) plan.moves.push_back({err.write_end, 2});
  plan.discard_stderr = options.stderr_mode == StderrMode::kDiscard;
  for (const auto& fd : options.pass_fds) plan.moves.push_back(fd);
  plan.limits = options.limits;
  plan.error_fd = exec_error.write_end;

  pid_t pid = ::fork();
  if (pid < 0) return make_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) run_child(plan, options.environment ? plan.env.data() : environ);
  // Also here, so a kill of the group right after this returns cannot miss the child.
  ::setpgid(pid, pid);
  exec_error.close_write();
  in.close_read();
  out.close_write();
  err.close_write();
  // The error pipe closes at a successful exec; otherwise it carries the child's errno.
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(exec_error.read_end, &child_errno, sizeof child_errno)) < 0 &&
         errno == EINTR) {
  }
  if (n > 0) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return make_error("cannot start '" + argv[0] + "': " + strerror(child_errno));
  }
  Subprocess p;
  p.pid_ = pid;
  p.stdin_fd_ = std::exchange(in.write_end, -1);
  p.stdout_fd_ = std::exchange(out.read_end, -1);
  p.stderr_fd_ = std::exchange(err.read_end, -1);
  return p;
}

std::vector<std::string> environment_subset(const std::vector<std::string>& names) {
  std::vector<std::string> kept;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    for (const auto& allowed : names) {
      bool prefix = !allowed.empty() && allowed.back() == '*';
      std::string_view stem(allowed.data(), allowed.size() - (prefix ? 1 : 0));
      if (prefix ? name.substr(0, stem.size()) == stem : name == stem) {
        kept.emplace_back(text);
        break;
      }
    }
  }
  return kept;
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
