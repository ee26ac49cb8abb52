#include "src/cli/memory_options.h"

#include <iostream>

namespace kopt::cli {

void add_database_option(cxxopts::Options& options) {
  options.add_options()("db", "memory database (default: $KOPT_DB, else " +
                                  memory::default_database_path().string() + ")",
                        cxxopts::value<std::string>());
}

std::filesystem::path database_path(const cxxopts::ParseResult& args) {
  if (args.count("db")) return args["db"].as<std::string>();
  return memory::default_database_path();
}

std::optional<memory::MemoryStore> open_memory(const cxxopts::ParseResult& args, bool create,
                                               const std::string& command) {
  memory::OpenOptions options;
  options.create = create;
  auto store = memory::MemoryStore::open(database_path(args), options);
  if (!store) {
    std::cerr << command << ": " << store.error() << "\n";
    return std::nullopt;
  }
  return std::move(*store);
}

}  // namespace kopt::cli
