#include "sandbox/worker/private_channel.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace kopt::worker {
namespace {

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads what fd 1 receives until the process ends; appends it to the log while the log is under
// `cap`, and past that starts the log over (the newest output is the useful part).
void drain(int pipe_fd, int log_fd, size_t cap) {
  static constexpr char kNote[] = "[kopt-sandbox: earlier output dropped at the log's size cap]\n";
  size_t written = 0;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(pipe_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    if (log_fd < 0) continue;
    size_t size = std::min(static_cast<size_t>(n), cap);
    if (written + size > cap) {
      if (::ftruncate(log_fd, 0) != 0 || ::lseek(log_fd, 0, SEEK_SET) < 0) continue;
      written = write_all(log_fd, kNote, sizeof kNote - 1) ? sizeof kNote - 1 : 0;
    }
    if (write_all(log_fd, buf, size)) written += size;
  }
}

}  // namespace

Result<int> divert_stdout_to_log(const std::string& log_path, size_t cap) {
  std::fflush(stdout);
  int channel = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (channel < 0) return make_error(errno_text("fcntl(F_DUPFD_CLOEXEC)"));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error(errno_text("pipe2"));
  // dup2 clears close-on-exec on fd 1, as stdout should be.
  if (::dup2(fds[1], STDOUT_FILENO) < 0) return make_error(errno_text("dup2"));
  ::close(fds[1]);
  int log_fd = -1;
  if (!log_path.empty()) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log_fd < 0) {
      std::fprintf(stderr, "kopt-sandbox: cannot open the output log %s (%s); output discarded\n",
                   log_path.c_str(), std::strerror(errno));
    }
  }
  std::thread(drain, fds[0], log_fd, cap == 0 ? 1 : cap).detach();
  return channel;
}

bool write_line(int fd, const std::string& data) { return write_all(fd, data.data(), data.size()); }

std::string default_output_log_path(int ordinal) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  return dir + "/kopt-sandbox-uid" + std::to_string(::getuid()) + "-gpu" + std::to_string(ordinal) +
         ".log";
}

}  // namespace kopt::worker
