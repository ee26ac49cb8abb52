// Helpers shared by the memory store tests: a temporary folder that removes itself, and a small
// hand-made memory (tasks, kernels with a lineage, evaluations) to build tests on.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "memory_store/memory_store.h"

namespace kopt::memory::testing {

// A fresh folder under $TMPDIR, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Runs a program (argv[0] a path) to completion within `limit`; throws when it cannot start.
CommandOutput run_program(const std::vector<std::string>& argv,
                          std::chrono::seconds limit = std::chrono::seconds(60));
// `binary args...`: the kopt a test was built against, its arguments after it.
inline CommandOutput run_kopt(const std::string& binary, std::vector<std::string> args,
                              std::chrono::seconds limit = std::chrono::seconds(60)) {
  args.insert(args.begin(), binary);
  return run_program(args, limit);
}
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Opens (creating) a memory at `path`, failing the test on error.
MemoryStore open_store(const std::filesystem::path& path);

// A kernel file for `task` whose body mentions `words` (so tests can steer full-text matches).
std::string kernel_source(const std::string& kernel_name, const std::string& body_words);

// Stores a task with `tags`; returns its id.
int64_t add_task(MemoryStore& store, const std::string& name, std::vector<std::string> tags);
// Stores a kernel; returns its id.
int64_t add_kernel(MemoryStore& store, const std::string& task, const std::string& source,
                   std::optional<int64_t> parent = std::nullopt);
// Stores a pair with sensible defaults; returns its id.
int64_t add_pair(MemoryStore& store, const std::string& task, int64_t slow, int64_t fast,
                 double speedup, const std::string& summary, std::vector<std::string> tags,
                 const std::string& gpu_arch = "sm_90");

// Unwraps a Result, failing the test with its error.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                  \
  auto lhs##_result = (expr);                                            \
  ASSERT_TRUE(lhs##_result.ok()) << lhs##_result.error();                \
  auto lhs = std::move(lhs##_result.value())

}  // namespace kopt::memory::testing
