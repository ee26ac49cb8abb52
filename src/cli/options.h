// Shared option parsing for subcommands (cxxopts), with errors that name the command.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kopt::cli {

// Parses argv; on --help prints help and returns nullopt with exit_code 0; on a bad option
// prints the error (naming the flag) and returns nullopt with exit_code 2; with --json among the
// arguments the error is also printed on stdout as {"error": ..., "exit_code": 2}.
std::optional<cxxopts::ParseResult> parse_options(cxxopts::Options& options, int argc, char** argv,
                                                  int& exit_code);

// Declares the positional arguments `names`, in order, and how --help shows them (`usage`).
void add_positionals(cxxopts::Options& options, std::vector<std::string> names,
                     const std::string& usage);

// False, after "PROGRAM: missing WHAT (see --help)" on stderr, when `key` was not given: the
// check every command makes for its one required argument.
bool given(const cxxopts::Options& options, const cxxopts::ParseResult& args,
           const std::string& key, const std::string& what);

// How a command stops without a result: the message on stderr for people and, with --json, also
// {"error": message, "exit_code": code} on stdout, so that a script reads exactly one JSON
// document in every outcome. Returns `code`.
struct CommandFailure {
  bool json = false;
  int operator()(int code, const std::string& message) const;
};

// The folder holding task directories: --tasks, else $KOPT_TASKS, else ./tasks, else the
// source tree's tasks/.
std::filesystem::path default_tasks_root();

}  // namespace kopt::cli
