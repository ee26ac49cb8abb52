// `kopt memory calls` and `kopt memory call ID`: the prompts the model saw and the answers it
// gave, as the daemon stored them (memory_store/plan_store.h).
#pragma once

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "memory_store/memory_store.h"

namespace kopt::cli {

// One line per stored call, newest first (--limit, --json).
int memory_calls(memory::MemoryStore& store, const cxxopts::ParseResult& args);
// One call in full: system prompt, prompt and answer (--json).
int memory_call(memory::MemoryStore& store, const std::vector<std::string>& words,
                const cxxopts::ParseResult& args);

}  // namespace kopt::cli
