#include "src/orchestrator/daemon_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kopt::orchestrator {

namespace {

// The pid written in the lock file, if it holds one.
std::optional<pid_t> read_pid(int fd) {
  char buffer[32] = {};
  ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return std::nullopt;
  long pid = std::strtol(buffer, nullptr, 10);
  if (pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

}  // namespace

std::filesystem::path lock_path(const std::filesystem::path& database) {
  // The real file's lock, whatever name (a symlink, a relative path) the database was given by.
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(database, ec);
  return (ec ? database : real).string() + ".lock";
}

Result<DaemonLock> DaemonLock::acquire(const std::filesystem::path& database) {
  std::filesystem::path path = lock_path(database);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::optional<pid_t> pid = read_pid(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return make_error("a kopt daemon is already running on " + database.string() + " (pid " +
                        (pid ? std::to_string(*pid) : std::string("unknown")) +
                        "); stop it first, or pass another --db");
    }
    return make_error("cannot lock " + path.string() + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    int err = errno;
    ::close(fd);
    return make_error("cannot write the lock file " + path.string() + ": " + std::strerror(err));
  }
  return DaemonLock(fd, std::move(path));
}

std::optional<pid_t> DaemonLock::holder(const std::filesystem::path& database) {
  std::filesystem::path path = lock_path(database);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<pid_t> pid;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    pid = read_pid(fd);
    if (!pid) pid = 0;  // locked, but the owner has not written its pid yet
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return pid;
}

DaemonLock::DaemonLock(DaemonLock&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

DaemonLock& DaemonLock::operator=(DaemonLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

DaemonLock::~DaemonLock() {
  if (fd_ < 0) return;
  // Empty the pid first so a reader between unlock and a new owner sees no stale pid.
  [[maybe_unused]] int rc = ::ftruncate(fd_, 0);
  ::close(fd_);
}

}  // namespace kopt::orchestrator
