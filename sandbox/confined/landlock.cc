#include "sandbox/confined/landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kopt {
namespace {

// Owns a descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

uint64_t handled_accesses(int abi) {
  uint64_t access =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
      LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
      LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
      LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) access |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) access |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  return access;
}

// Adds `path` with `access` (folder accesses dropped for a file, as the kernel requires).
bool add_rule(int ruleset, const std::filesystem::path& path, uint64_t access) {
  Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (fd.get() < 0) return errno == ENOENT;  // a missing path is only skipped
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec))
    access &=
        LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access;
  rule.parent_fd = fd.get();
  return ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0;
}

}  // namespace

std::string landlock_unavailable_reason() {
  if (const char* assume = std::getenv("KOPT_ASSUME_NO_LANDLOCK"); assume && *assume == '1')
    return "Landlock unavailable: KOPT_ASSUME_NO_LANDLOCK=1";
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return std::string("Landlock unavailable: ") + std::strerror(errno);
  return "";
}

std::string restrict_file_access(const FileAccessRules& rules) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return std::string("Landlock unavailable: ") + std::strerror(errno);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled_accesses(static_cast<int>(abi));
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (ruleset.get() < 0) return std::string("landlock_create_ruleset: ") + std::strerror(errno);
  const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  for (const auto& path : rules.readable) {
    if (!add_rule(ruleset.get(), path, read))
      return "landlock_add_rule " + path.string() + ": " + std::strerror(errno);
  }
  for (const auto& path : rules.writable) {
    if (!add_rule(ruleset.get(), path, read | LANDLOCK_ACCESS_FS_WRITE_FILE))
      return "landlock_add_rule " + path.string() + ": " + std::strerror(errno);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
    return std::string("landlock_restrict_self: ") + std::strerror(errno);
  return "";
}

}  // namespace kopt
