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

}  // namespace kopt
