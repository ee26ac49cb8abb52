#include "src/cli/options.h"

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/option_errors.h"

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
    CommandFailure fail;
    for (int i = 1; i < argc; ++i) fail.json = fail.json || std::string(argv[i]) == "--json";
    exit_code =
        fail(2, options.program() + ": " + describe_option_error(e, argc, argv) + " (see --help)");
    return std::nullopt;
  }
}

void add_positionals(cxxopts::Options& options, std::vector<std::string> names,
                     const std::string& usage) {
  options.parse_positional(std::move(names));
  options.positional_help(usage);
}

bool given(const cxxopts::Options& options, const cxxopts::ParseResult& args,
           const std::string& key, const std::string& what) {
  if (args.count(key)) return true;
  std::cerr << options.program() << ": missing " << what << " (see --help)\n";
  return false;
}

int CommandFailure::operator()(int code, const std::string& message) const {
  std::cerr << message << "\n";
  if (json)
    std::cout << dump_json_ascii(nlohmann::json{{"error", message}, {"exit_code", code}}, 2)
              << "\n";
  return code;
}

std::filesystem::path default_tasks_root() {
  if (const char* v = std::getenv("KOPT_TASKS"); v && *v) return v;
  if (std::filesystem::exists("tasks")) return "tasks";
  return std::filesystem::path(KOPT_SOURCE_DIR) / "tasks";
}

}  // namespace kopt::cli
