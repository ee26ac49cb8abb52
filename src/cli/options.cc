#include "src/cli/options.h"

#include <cstdlib>
#include <iostream>

namespace kopt::cli {

std::optional<cxxopts::ParseResult> parse_options(cxxopts::Options& options, int argc, char** argv,
                                                  int& exit_code) {
  options.add_options()("h,help", "show this help");
  try {
    auto result = options.parse(argc, argv);
    if (result.count("help")) {
      std::cout << options.help() << "\n";
      exit_code = 0;
      return std::nullopt;
    }
    return result;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << options.program() << ": " << e.what() << " (see --help)\n";
    exit_code = 2;
    return std::nullopt;
  }
}

std::filesystem::path default_tasks_root() {
  if (const char* v = std::getenv("KOPT_TASKS"); v && *v) return v;
  if (std::filesystem::exists("tasks")) return "tasks";
  return std::filesystem::path(KOPT_SOURCE_DIR) / "tasks";
}

}  // namespace kopt::cli
