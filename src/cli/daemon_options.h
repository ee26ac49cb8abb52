// The database that `kopt status` and `kopt submit` talk to: the same one `kopt run` uses, chosen
// by the same rule (--db, else $KOPT_DB, else the config file's database.path).
#pragma once

#include <cxxopts.hpp>
#include <filesystem>

#include "common/result.h"

namespace kopt::cli {

// Adds --db and --config.
void add_daemon_database_options(cxxopts::Options& options);

// The database the parsed options name; an error when the config file cannot be read.
Result<std::filesystem::path> daemon_database_path(const cxxopts::ParseResult& args);

}  // namespace kopt::cli
