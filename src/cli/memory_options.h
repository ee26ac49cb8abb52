// The --db and --config options every command that reads or writes the memory shares (kopt
// status, submit, memory, report, export, doctor; kopt run parses its own, resolved by the same
// rule: database_path_for in src/config/config.h), and opening the memory they name.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>

#include "common/result.h"
#include "memory_store/memory_store.h"

namespace kopt::cli {

// Adds --db PATH and --config FILE.
void add_database_option(cxxopts::Options& options);

// The database the parsed options name: --db, else $KOPT_DB, else the config's database.path
// (--config, else $KOPT_CONFIG, else the data directory's config.json), else the data
// directory's memory.db. An error when that config cannot be read.
Result<std::filesystem::path> database_path(const cxxopts::ParseResult& args);

// How a command uses the memory.
enum class MemoryAccess {
  kRead,          // never creates, never migrates, works on a file the user may only read
  kWrite,         // an existing database (migrated to this kopt's schema when older)
  kWriteOrCreate  // created when missing (kopt memory import)
};

// Opens the memory. Prints "COMMAND: error" and returns nullopt on failure.
std::optional<memory::MemoryStore> open_memory(const cxxopts::ParseResult& args,
                                               MemoryAccess access, const std::string& command);

// Opens the memory at `path` (already checked with database_file_readable). Prints
// "COMMAND: error" and returns nullopt on failure.
std::optional<memory::MemoryStore> open_memory_at(const std::filesystem::path& path,
                                                  MemoryAccess access, const std::string& command);

// The exit code for the last failure of open_memory or open_memory_at in this process: memory::
// kExitUnreadableDatabase for a file that is there but cannot be read as a memory (a folder,
// not SQLite, damaged, a schema this command cannot read), else 1.
int memory_open_exit_code();

// check_database_file (memory_store/database_check.h) printed as "COMMAND: error"; false when
// the command must stop (with memory::kExitUnreadableDatabase).
// `thorough`: every page, whatever the file's size (commands that write).
bool database_file_readable(const std::filesystem::path& path, const std::string& command,
                            bool thorough = false);

}  // namespace kopt::cli
