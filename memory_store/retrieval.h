// Choosing the few pairs worth showing an LLM for a task and its current kernel.
//
// Candidates come from three bounded reads, so the cost stays flat as the memory grows: the
// task's own pairs (strongest first), the newest pairs tagged with the query's operation family,
// and the newest pairs that FTS5 matches on any of the query's words (its task, family tags and
// the longest identifiers of the current kernel). Each candidate is then scored:
//
//   score = 1.0 * text      BM25 (bm25.h) of its summary, tags, task name and the identifiers of
//                           both kernels against all the query's words, relative to the best
//                           candidate, 0..1
//         + 0.6 * family    the query's operation family (first tag) 0.5, other tags 0.5 shared
//         + 0.4 * same_task
//         + 0.3 * gpu       same arch 1, same major architecture 0.5
//         + 0.3 * speed     |log2 speedup| / 3, capped at 1 (a big slowdown is a loud warning)
//         + 0.5 * (useful - 0.5)   useful = (improved + 1) / (retrieved + 2)
//         + 0.4 * same_bottleneck  1 when the pair's slow kernel (its newest profile) had the
//                           query kernel's bottleneck class (sandbox/profile_bottleneck.h), 0
//                           when they differ or either is unknown: a pair that cured a
//                           memory-latency-bound kernel is a good example for another one
//
// and the result takes the best pair of each lineage (a branch of successive improvements),
// at most max(1, k/3) negatives, ordered by score then pair id so equal databases and queries
// always give the same answer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "memory_store/records.h"

namespace kopt::memory {

struct RetrievalQuery {
  std::string task;                      // the task being optimized
  std::vector<std::string> family_tags;  // its tags, operation family first
  std::string gpu_arch;                  // "sm_90"
  std::string kernel_source;             // the kernel about to be improved
  int k = 4;                             // how many pairs to return
  bool include_negatives = true;         // also return warnings (changes that made it slower)
  // The current kernel's bottleneck class ("memory_latency"); "" or "unknown": not profiled,
  // and the same_bottleneck term is 0 for every pair.
  std::string bottleneck;
  // Classifies a stored profile (EvaluationRecord::profile_json) into the same names. The memory
  // keeps profiles without reading them, so the caller that knows their form supplies this;
  // without it the same_bottleneck term is 0.
  std::function<std::string(const std::string& profile_json)> bottleneck_of_profile;
};

struct RetrievedPair {
  PairRecord pair;
  double score = 0;       // the ranking score above
  double text_score = 0;  // the BM25 part, 0..1
  // The class of the slow kernel's newest profile; "unknown" when it has none or the query
  // has no class to match (then it is not looked up).
  std::string slow_bottleneck = "unknown";
};

// The parts of the score that do not depend on BM25, for one candidate whose slow kernel had
// the bottleneck class `slow_bottleneck` (exposed for tests).
double non_text_score(const RetrievalQuery& query, const PairRecord& pair,
                      const std::string& slow_bottleneck = "unknown");

// Whether two bottleneck classes are the same known class ("" and "unknown" match nothing).
bool same_bottleneck(const std::string& a, const std::string& b);

// How close two architectures are: 1 equal ("sm_90" and "sm_90a" count as equal), 0.5 same
// major version, 0 otherwise or unknown.
double arch_similarity(const std::string& a, const std::string& b);

// Orders scored candidates and applies the lineage and negative limits (exposed for tests).
std::vector<RetrievedPair> select_diverse(std::vector<RetrievedPair> candidates, int k);

}  // namespace kopt::memory
