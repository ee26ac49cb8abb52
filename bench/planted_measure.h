// Planted known-good pairs among realistic distractors (issue 36): for each expert case (a task
// and its current kernel, where an expert names the right next technique), one pair teaching
// that technique on a task of the same family is planted at a random place among `density`
// distractor pairs built from the suite's real kernels; then kopt's retrieval, as the planner
// calls it, and three baselines rank the memory for the case's planner state. See
// bench/memory_planted.cc for the command and the expert.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/memory_measures.h"

namespace kopt::bench {

// A planner state where the expert names the next step: the task, which of its known-good
// kernels is current (0: the baseline), the technique named and the ones also accepted.
struct ExpertCase {
  std::string task;
  size_t kernel = 0;
  std::string technique;
  std::vector<std::string> also_right;
  std::string why;  // the bottleneck, in the expert's words
};

// The cases the expert wrote (bench/planted_measure.cc).
const std::vector<ExpertCase>& expert_cases();

// What kopt's retrieval showed for one case.
struct CaseOutcome {
  std::string task, technique, planted_task;
  int64_t planted_pair = 0;             // its id in the memory
  int64_t kernel_id = 0;                // the query's current kernel
  size_t rank = 0;                      // of the planted pair in kopt's first 100 (0: absent)
  std::vector<std::string> shown;       // kopt's four: "technique (task)", "tuning (task)"
  int relevant = 0;                     // pairs of the family teaching a right technique
  std::vector<std::string> bm25_shown;  // BM25's four, alike ("neg" marks a slowdown)
  size_t bm25_rank = 0;                 // of the planted pair by BM25 over every pair
};

struct PlantedResult {
  int seeds = 1;                     // memories built, one per seed; methods hold their mean
  int64_t density = 0;               // distractor pairs
  int64_t pairs = 0;                 // all pairs in the memory
  std::vector<MethodScore> methods;  // kopt first
  std::vector<CaseOutcome> cases;
};

// Builds the memory at `db` (a fresh SQLite file) and scores every case; `cases` empty: all.
Result<PlantedResult> run_planted(const std::vector<CorpusTask>& corpus, int64_t density,
                                  uint64_t seed, const std::filesystem::path& db,
                                  const std::vector<ExpertCase>& cases = expert_cases());

// The mean of results of one density over several seeds: the methods' scores averaged (the
// median rank too; cases not ranked summed), the cases of the first seed.
PlantedResult mean_of(const std::vector<PlantedResult>& results);

// The markdown tables of one result.
std::string planted_markdown(const PlantedResult& result);

}  // namespace kopt::bench
