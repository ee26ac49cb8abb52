// The --db option shared by `kopt memory` and `kopt export`, and opening the memory it names.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>

#include "memory_store/memory_store.h"

namespace kopt::cli {

// Adds --db PATH (default: $KOPT_DB, else the data directory's memory.db).
void add_database_option(cxxopts::Options& options);

// The database path the parsed options name.
std::filesystem::path database_path(const cxxopts::ParseResult& args);

// Opens the memory; read-only commands pass create=false so a missing file is an error, not a new
// empty database. Prints "COMMAND: error" and returns nullopt on failure.
std::optional<memory::MemoryStore> open_memory(const cxxopts::ParseResult& args, bool create,
                                               const std::string& command);

}  // namespace kopt::cli
