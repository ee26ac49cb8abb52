#include "src/cli/memory_options.h"

#include <iostream>

#include "config/config.h"
#include "memory_store/database_check.h"

namespace kopt::cli {

void add_database_option(cxxopts::Options& options) {
  options.add_options()("db",
                        "memory database (default: $KOPT_DB, else the config's database.path)",
                        cxxopts::value<std::string>(),
                        "PATH")("config",
                                "config file, for its database.path (default: $KOPT_CONFIG, else " +
                                    default_config_path().string() + ")",
                                cxxopts::value<std::string>(), "FILE");
}

Result<std::filesystem::path> database_path(const cxxopts::ParseResult& args) {
  std::optional<std::filesystem::path> db, config;
  if (args.count("db")) db = args["db"].as<std::string>();
  if (args.count("config")) config = args["config"].as<std::string>();
  return resolve_database_path(db, config);
}

namespace {
int last_open_exit_code = 1;
}  // namespace

int memory_open_exit_code() { return last_open_exit_code; }

bool database_file_readable(const std::filesystem::path& path, const std::string& command,
                            bool thorough) {
  auto checked = memory::check_database_file(path, thorough);
  if (!checked) std::cerr << command << ": " << checked.error() << "\n";
  return checked.ok();
}

std::optional<memory::MemoryStore> open_memory(const cxxopts::ParseResult& args,
                                               MemoryAccess access, const std::string& command) {
  last_open_exit_code = 1;
  auto path = database_path(args);
  if (!path) {
    std::cerr << command << ": " << path.error() << "\n";
    return std::nullopt;
  }
  if (!database_file_readable(*path, command, access != MemoryAccess::kRead)) {
    last_open_exit_code = memory::kExitUnreadableDatabase;
    return std::nullopt;
  }
  return open_memory_at(*path, access, command);
}

std::optional<memory::MemoryStore> open_memory_at(const std::filesystem::path& path,
                                                  MemoryAccess access, const std::string& command) {
  last_open_exit_code = 1;
  memory::OpenOptions options;
  options.create = access == MemoryAccess::kWriteOrCreate;
  options.read_only = access == MemoryAccess::kRead;
  std::error_code ec;
  bool existed = std::filesystem::exists(path, ec);
  auto store = memory::MemoryStore::open(path, options);
  if (!store) {
    std::cerr << command << ": " << store.error() << "\n";
    // A file that is there but does not open as a memory (e.g. a schema to upgrade).
    if (existed) last_open_exit_code = memory::kExitUnreadableDatabase;
    return std::nullopt;
  }
  return std::move(*store);
}

}  // namespace kopt::cli
