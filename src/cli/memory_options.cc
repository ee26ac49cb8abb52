#include "src/cli/memory_options.h"

#include <iostream>

#include "src/config/config.h"

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

std::optional<memory::MemoryStore> open_memory(const cxxopts::ParseResult& args,
                                               MemoryAccess access, const std::string& command) {
  auto path = database_path(args);
  if (!path) {
    std::cerr << command << ": " << path.error() << "\n";
    return std::nullopt;
  }
  memory::OpenOptions options;
  options.create = access == MemoryAccess::kWriteOrCreate;
  options.read_only = access == MemoryAccess::kRead;
  auto store = memory::MemoryStore::open(*path, options);
  if (!store) {
    std::cerr << command << ": " << store.error() << "\n";
    return std::nullopt;
  }
  return std::move(*store);
}

}  // namespace kopt::cli
