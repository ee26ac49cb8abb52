// Shared by the tests of an export folder as a project: the sample memory exported by the real
// kopt binary, and the folder configured and built by the real cmake and host compiler.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace kopt::memory::testing {

// Runs `args` to the end (throws when it cannot start).
CommandOutput run_checked(const std::vector<std::string>& args,
                          std::chrono::seconds timeout = std::chrono::seconds(60));

// The sample memory (sample_memory.h) in `dir`/memory.db, exported into `out` with the source
// tree's tasks as the references' folder.
CommandOutput export_sample_memory(const std::filesystem::path& dir,
                                   const std::filesystem::path& out);

// `cmake -S source -B build` with the toolkit and `defines`, then a build; the output of the
// step that failed, or of the build.
CommandOutput cmake_configure_and_build(const std::filesystem::path& source,
                                        const std::filesystem::path& build,
                                        const std::vector<std::string>& defines = {});

}  // namespace kopt::memory::testing
