#include "tests/memory_store/export_project.h"

#include <stdexcept>

#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory::testing {

CommandOutput run_checked(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  auto out = run_command(args, "", timeout);
  if (!out) throw std::runtime_error(out.error());
  return *out;
}

CommandOutput export_sample_memory(const std::filesystem::path& dir,
                                   const std::filesystem::path& out) {
  std::string db = (dir / "memory.db").string();
  {
    auto store = open_store(db);
    fill_sample_memory(store);
  }
  // Each kernel runs under the four sanitizer tools first (racecheck alone ~30 s on an H100).
  return run_checked({KOPT_BINARY, "export", "--db", db, "--out", out.string(), "--tasks",
                      (std::filesystem::path(KOPT_SOURCE_DIR) / "tasks").string()},
                     std::chrono::seconds(900));
}

CommandOutput cmake_configure_and_build(const std::filesystem::path& source,
                                        const std::filesystem::path& build,
                                        const std::vector<std::string>& defines) {
  std::vector<std::string> configure = {
      "cmake", "-S", source.string(), "-B", build.string(), "-DCUDAToolkit_ROOT=" KOPT_CUDA_ROOT};
  configure.insert(configure.end(), defines.begin(), defines.end());
  auto configured = run_checked(configure, std::chrono::seconds(300));
  if (configured.exit_code != 0) return configured;
  return run_checked({"cmake", "--build", build.string(), "-j", "2"}, std::chrono::seconds(1200));
}

}  // namespace kopt::memory::testing
