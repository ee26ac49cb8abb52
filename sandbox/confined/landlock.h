// Linux Landlock (kernel 5.13 and later, unprivileged): after restrict_file_access() this
// process and its future children can open files only under the folders it names. The confined
// compiler uses it as a second line behind the include scan: even a header name the scan missed
// cannot reach /etc, /proc (the daemon's environment) or a user's home.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kopt {

struct FileAccessRules {
  std::vector<std::filesystem::path> readable;  // files and folders read (and listed)
  std::vector<std::filesystem::path> writable;  // e.g. /dev/null
};

// Applies the rules for good. Returns a note when the kernel has no Landlock (the caller goes
// on without it: the scan and the scrubbed environment still hold); empty when applied. Paths
// that do not exist are skipped.
std::string restrict_file_access(const FileAccessRules& rules);

// "" when this kernel has Landlock (the confined compiler will apply it), else why not. With
// KOPT_ASSUME_NO_LANDLOCK=1 in the environment it answers as a kernel without Landlock would
// (to see and test what kopt does on such a machine).
std::string landlock_unavailable_reason();

// The line `kopt run` and `kopt doctor` print where Landlock is missing.
inline constexpr const char* kUnconfinedCompileWarning =
    "the confined compiler runs WITHOUT Landlock on this kernel: a model-written kernel that got "
    "past the include checks could make NVRTC read any file this user can read; kopt runs "
    "model-written kernels here only with --allow-unconfined-compile (tuner-only runs need "
    "nothing)";

}  // namespace kopt
