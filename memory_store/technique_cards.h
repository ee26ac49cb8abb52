// Lessons as technique cards, merged per technique: what the memory knows about one technique
// (techniques.h), read from the store on demand, never stored twice. A card says what the
// technique did to a kernel's bottleneck (the slow and fast kernels' profiles), where it gained
// (tasks and their families, with the best and median speedup of the pairs that taught it),
// what went wrong when plans applied it (their failure texts, and the pairs where it made a
// kernel slower), and how the gain the planner expected compares with the gain measured
// (KernelBlaster's expected-vs-actual). The planner reads a few cards beside its raw examples;
// `kopt memory cards` shows them to people. This is the memory's curation: many pairs and plans
// about one technique become one card.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

struct TechniqueCard {
  std::string technique;
  int64_t pairs = 0;  // positive pairs that teach it (tuner pairs left out)
  // "memory_latency -> dram_bandwidth" -> how many pairs, where both kernels were profiled.
  std::map<std::string, int64_t> bottlenecks;
  // Where it gained: "softmax (reduction): best 1.52x, median 1.30x over 3 pairs", best first.
  std::vector<std::string> applies_when;
  // The lessons of pairs where it made a kernel slower, then the failure texts of plans that
  // applied it and failed; each newest first, each once, at most CardQuery::max_pitfalls.
  std::vector<std::string> pitfalls;
  int64_t plans = 0;           // plans naming it
  int64_t plans_verified = 0;  // ... that produced a verified kernel
  int64_t plans_failed = 0;    // ... that produced none
  // What the plans expected ("expected 1.3x" in a plan's detail) and what was measured (the
  // verified plans' speedups over their parents and the positive pairs' speedups).
  std::vector<double> expected;
  std::vector<double> measured;
  int64_t evidence() const { return pairs + plans; }
};

struct CardQuery {
  // "" for every task; else the task's own pairs and plans and those of tasks sharing its
  // operation family (its first tag).
  std::string task;
  // Classifies a stored profile (evaluations.profile_json) into a bottleneck class; without it
  // the cards say nothing of bottlenecks (the memory keeps profiles without reading them).
  std::function<std::string(const std::string& profile_json)> bottleneck_of_profile;
  size_t max_pitfalls = 3;
  size_t max_applies = 4;
};

// Every technique the memory has seen, most evidence first (ties by name).
Result<std::vector<TechniqueCard>> technique_cards(sql::Database& db, const CardQuery& query);

// The expected speedup a plan's text states ("expected 1.3x", "expect about 1.25x"), 0 if none.
double expected_speedup_in(const std::string& text);

// A card as a few lines for a prompt or a terminal.
std::string describe_card(const TechniqueCard& card);

// The median of `values` (0 when empty).
double median_of(std::vector<double> values);

}  // namespace kopt::memory
