// Command-line flags that choose and start the GPU worker (kopt-sandbox), shared by every
// command that evaluates on a GPU.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>

#include "sandbox/evaluator.h"

namespace kopt::cli {

// The kopt-sandbox next to the running kopt binary (they are built into one bin/ folder).
std::filesystem::path default_sandbox_worker();

// Adds --worker PATH, --worker-prefix "CMD ARGS" and --device N.
void add_sandbox_flags(cxxopts::Options& options);

// The evaluator options those flags ask for.
SandboxOptions sandbox_options_from(const cxxopts::ParseResult& args);

}  // namespace kopt::cli
