// `kopt memory cards [--task T] [--json]`: what the memory knows per technique, merged from its
// pairs, profiles and plans (memory_store/technique_cards.h): the lessons the planner reads.
#pragma once

#include <cxxopts.hpp>

#include "memory_store/memory_store.h"

namespace kopt::cli {

// Every technique's card, most evidence first; --task narrows to the task and its family.
int memory_cards(memory::MemoryStore& store, const cxxopts::ParseResult& args);

}  // namespace kopt::cli
