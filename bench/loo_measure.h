// Leave-one-out ranking over a recorded night (issue 36): each planner call of a kopt memory
// database is a query (its task and the parent kernel it planned from, read from the plans
// table); its gold is the set of techniques that the parent's verified descendants, created
// after the call, add over the parent's code where they beat it by at least 1.04x; the query's
// own lineage (the parent, its ancestors and its descendants) is held out of the memory. kopt's
// retrieval and the three baselines of bench/memory_measures.h rank what is left.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/memory_measures.h"

namespace kopt::bench {

struct LooQuery {
  std::string task;
  int64_t parent_kernel_id = 0;
  std::string created_at;          // of the call's plans
  std::vector<std::string> gold;   // techniques of the descendants that beat the parent
  std::vector<std::string> shown;  // techniques of kopt's four (each pair's, joined by '+')
  std::vector<int64_t> shown_ids;  // kopt's four pairs
  double kopt_recall = 0, kopt_ndcg = 0;
};

struct LooResult {
  int64_t planner_calls = 0;         // llm_calls of the planner agent (what a call costs)
  int64_t queries = 0;               // planner states read from the plans table
  int64_t scored = 0;                // those with a non-empty gold
  int64_t pairs = 0;                 // pairs in the memory
  std::vector<MethodScore> methods;  // kopt first; planted_at_4 and ranks unused
  std::vector<LooQuery> detail;      // every scored query
};

// Scores the database at `db` (opened read-only); `min_gain` the factor a descendant must beat
// its parent by; `seed` drives the random baseline.
Result<LooResult> run_loo(const std::filesystem::path& db, double min_gain = 1.04,
                          uint64_t seed = 36);

std::string loo_markdown(const LooResult& result);

}  // namespace kopt::bench
