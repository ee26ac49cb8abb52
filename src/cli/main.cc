// kopt: makes GPU kernels faster overnight. Dispatches to the subcommands in command_table.cc;
// exceptions stop at this boundary and become one line on stderr and exit code 70.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>

#include "common/log_scrubbing.h"
#include "common/strings.h"
#include "src/cli/command.h"

namespace {

void print_usage() {
  std::cout << "kopt " << KOPT_VERSION << ": LLM-driven CUDA kernel optimization\n\n"
            << "usage: kopt <command> [options]   (kopt <command> --help for details)\n\n"
            << "commands:\n";
  for (const auto& c : kopt::cli::commands()) {
    std::printf("  %-10s %s\n", c.name, c.summary);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // Log lines go to stderr: stdout is the commands' output (JSON for scripts among it).
  spdlog::set_default_logger(spdlog::stderr_color_mt("kopt"));
  kopt::scrub_default_logger();  // no key or raw control character reaches a log line
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "kopt " << KOPT_VERSION << "\n";
    return 0;
  }
  std::vector<std::string> names;
  for (const auto& c : kopt::cli::commands()) {
    names.push_back(c.name);
    if (c.name == std::string(argv[1])) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::cerr << "kopt " << argv[1] << ": internal error: " << e.what() << "\n";
        return 70;
      }
    }
  }
  std::cerr << "kopt: unknown command '" << argv[1] << "'" << kopt::did_you_mean(argv[1], names)
            << "; see kopt --help\n";
  return 2;
}
