// Shared option parsing for subcommands (cxxopts), with errors that name the command.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>

namespace kopt::cli {

// Parses argv; on --help prints help and returns nullopt with exit_code 0; on a bad option
// prints the error and returns nullopt with exit_code 2.
std::optional<cxxopts::ParseResult> parse_options(cxxopts::Options& options, int argc, char** argv,
                                                  int& exit_code);

// The folder holding task directories: --tasks, else $KOPT_TASKS, else ./tasks, else the
// source tree's tasks/.
std::filesystem::path default_tasks_root();

}  // namespace kopt::cli
