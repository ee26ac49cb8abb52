// A temporary directory for tests that removes itself, with everything in it, when it goes.
#pragma once

#include <filesystem>
#include <string>

namespace kopt::testing {

// A fresh directory under $TMPDIR (else /tmp), named after `prefix`.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kopt-test-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace kopt::testing
