// One daemon per memory database: an exclusive flock(2) on "<database>.lock", which also holds
// the owner's pid so a second `kopt run` can say who is running. The kernel drops the lock when
// the owner dies, kill -9 included, so a stale lock file never blocks the next run.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "common/result.h"

namespace kopt::orchestrator {

class DaemonLock {
 public:
  // Takes the lock for `database`, or fails with "... already running (pid N) ...".
  static Result<DaemonLock> acquire(const std::filesystem::path& database);

  // The pid of the daemon holding the lock on `database`, if one does (for `kopt status`).
  static std::optional<pid_t> holder(const std::filesystem::path& database);

  DaemonLock(DaemonLock&& other) noexcept;
  DaemonLock& operator=(DaemonLock&& other) noexcept;
  DaemonLock(const DaemonLock&) = delete;
  DaemonLock& operator=(const DaemonLock&) = delete;
  ~DaemonLock();

  const std::filesystem::path& path() const { return path_; }

 private:
  DaemonLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

std::filesystem::path lock_path(const std::filesystem::path& database);

}  // namespace kopt::orchestrator
