// Small file-system helpers whose errors name the path and errno.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"

namespace kopt {

Result<std::string> read_file(const std::filesystem::path& path);

// Writes through a temporary file and rename(), so readers never see a half-written file.
Status write_file_atomic(const std::filesystem::path& path, const std::string& contents);

// 1-based line number of byte `offset` in `text`.
int line_of_offset(const std::string& text, size_t offset);

// The directory for kopt's data ($KOPT_HOME, else $XDG_DATA_HOME/kopt, else ~/.local/share/kopt).
std::filesystem::path data_directory();

// The directory for caches ($KOPT_CACHE_DIR, else $XDG_CACHE_HOME/kopt, else ~/.cache/kopt).
std::filesystem::path cache_directory();

}  // namespace kopt
