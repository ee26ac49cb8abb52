#include "src/cli/daemon_options.h"

#include "src/config/config.h"
#include "src/orchestrator/daemon.h"

namespace kopt::cli {

void add_daemon_database_options(cxxopts::Options& options) {
  options.add_options()("db", "memory database (default: $KOPT_DB, else the config's)",
                        cxxopts::value<std::string>())(
      "config", "config file (for its database path)", cxxopts::value<std::string>());
}

Result<std::filesystem::path> daemon_database_path(const cxxopts::ParseResult& args) {
  std::optional<std::filesystem::path> flag;
  if (args.count("db")) flag = args["db"].as<std::string>();
  std::optional<std::filesystem::path> config_path;
  if (args.count("config")) config_path = args["config"].as<std::string>();
  auto config = load_config_or_defaults(config_path);
  if (!config) {
    if (flag) return *flag;
    return make_error(config.error());
  }
  return orchestrator::resolve_database_path(flag, *config);
}

}  // namespace kopt::cli
