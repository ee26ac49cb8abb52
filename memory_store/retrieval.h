// Choosing the few pairs worth showing an LLM for a task and its current kernel.
//
// Candidates come from three bounded reads, so the cost stays flat as the memory grows: the
// task's own pairs (strongest first), the newest pairs tagged with the query's operation family,
// and the newest pairs that FTS5 matches on any of the query's words (its task, family tags and
// the longest identifiers of the current kernel). Each candidate is then scored:
//
//   score = 1.0 * text      BM25 (bm25.h) of its summary, tags, task name and the identifiers of
//                           both kernels against all the query's words, relative to the best
//                           candidate, times min(1, coverage / 0.4) where coverage is its share
//                           of the query's distinct words (absolute), 0..1
//         + 0.6 * family    the query's operation family (first tag) 0.5, other tags 0.5 shared
//         + 0.4 * same_task
//         + 0.3 * gpu       same arch 1, same major architecture 0.5
//         + 0.3 * speed     |log2 speedup| / 3, capped at 1 (a big slowdown is a loud warning)
//         + 0.5 * (useful - 0.5)   useful = (improved + 1) / (retrieved + 2)
//         + 0.4 * same_bottleneck  1 when the pair's slow kernel (its newest profile) had the
//                           query kernel's bottleneck class (sandbox/profile_bottleneck.h), 0
//                           when they differ or either is unknown: a pair that cured a
//                           memory-latency-bound kernel is a good example for another one
//         + 0.3 * novelty   +1 when the pair teaches a technique (techniques.h) the current
//                           kernel does not use yet, -1 when every technique it teaches is
//                           already in the current kernel, 0 when it names none
//         + 0.3 * production  1 when the pair's fast kernel (its newest verified time on the
//                           pair's GPU model) is at least as fast as the best production baseline
//                           measured for the pair's task on that GPU model
//                           (production_baselines.h), i.e. its SOL score against what users run
//                           is at least 0.5; 0 when slower or when nothing was measured. A change
//                           that reached cuBLASLt or torch.compile teaches more than one that
//                           sped up a plain kernel by as much
//
// A pair never shown: one of another task and operation family that shares less than 20% of the
// query's distinct words (an absolute relevance threshold); one whose fast kernel is the current
// kernel or one of its ancestors (`exclude_kernels`), or a near-copy of the current kernel
// (`near_copy`): the model would be shown where it already is. The result takes one example per
// (task, techniques taught) (example_key: a later step of a lineage that teaches something new
// is shown, a second pair teaching the same thing on the same task is not; a pair naming no
// technique counts by its lineage), at most
// max(1, k/3) negatives and at most `max_tuner_pairs` pairs whose fast kernel the tuner made
// (none by default: a tuning line teaches no technique), and prefers pairs that add a technique
// no chosen pair teaches yet (a pair adding nothing new waits for a second pass); ordered by
// score then pair id so equal databases and queries always give the same answer.
#pragma once

#include <functional>
#include <set>
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
  // The current kernel's id in this memory (0: not stored): pairs whose fast kernel is it or
  // one of its ancestors are not shown.
  int64_t current_kernel_id = 0;
  // More kernels whose pairs are not shown (retrieve() adds the current kernel's lineage).
  std::set<int64_t> exclude_kernels;
  // Whether a fast kernel's source is a near-copy of the current kernel (the caller knows the
  // similarity measure); asked only of pairs about to be chosen. Empty: none is.
  std::function<bool(const std::string& fast_source)> near_copy;
  // The techniques the current kernel already uses (techniques_in of its source).
  std::vector<std::string> current_techniques;
  int max_tuner_pairs = 0;  // pairs whose fast kernel is a tuner configuration
  // The randomised example slot (example_draws.h): given n, a uniform index in [0, n). Set, the
  // last positive example (or, with fewer than k shown, one more) is a pair drawn uniformly from
  // the eligible candidates (draw_example_slot). Unset: retrieval is deterministic.
  std::function<size_t(size_t n)> draw_index;
};

// At most this many candidates are eligible for the random slot: the best-scoring positive,
// non-tuner, non-excluded, non-near-copy pairs that no other slot shows. A fixed pool keeps the
// propensity exact (1 / its size) without asking near_copy of every candidate.
inline constexpr size_t kMaxDrawCandidates = 32;

struct RetrievedPair {
  PairRecord pair;
  double score = 0;          // the ranking score above
  double text_score = 0;     // the BM25 part, 0..1
  double text_coverage = 0;  // the share of the query's distinct words it contains
  // The class of the slow kernel's newest profile; "unknown" when it has none or the query
  // has no class to match (then it is not looked up).
  std::string slow_bottleneck = "unknown";
  // What the pair teaches (techniques.h); "tuning" alone for a tuner configuration.
  std::vector<std::string> techniques;
  bool tuner_only = false;  // the fast kernel is a tuner configuration of the slow one
  // The fast kernel's newest verified median on the pair's GPU model (0: none recorded), and the
  // best production baseline of the pair's task on that model ("" and 0: none measured).
  double fast_us = 0;
  std::string production_name;
  double production_us = 0;
  // Set only on the pair the random slot drew: the draw's probability and how many pairs it was
  // drawn from (RetrievalQuery::draw_index).
  double propensity = 0;
  int64_t draw_candidates = 0;
  // Whether the fast kernel is at least as fast as that production baseline (S >= 0.5).
  bool reached_production() const {
    return fast_us > 0 && production_us > 0 && fast_us <= production_us;
  }
};

// The parts of the score that do not depend on BM25, for one candidate whose slow kernel had
// the bottleneck class `slow_bottleneck`, that teaches `techniques` and whose fast kernel
// `reached_production` (exposed for tests).
double non_text_score(const RetrievalQuery& query, const PairRecord& pair,
                      const std::string& slow_bottleneck = "unknown",
                      const std::vector<std::string>& techniques = {},
                      bool reached_production = false);

// The diversity key: its task, whether it is a warning, and the techniques it teaches (its
// lineage where it names none). One example per key is shown.
std::string example_key(const RetrievedPair& candidate);

// Whether two bottleneck classes are the same known class ("" and "unknown" match nothing).
bool same_bottleneck(const std::string& a, const std::string& b);

// How close two architectures are: 1 equal ("sm_90" and "sm_90a" count as equal), 0.5 same
// major version, 0 otherwise or unknown.
double arch_similarity(const std::string& a, const std::string& b);

// Orders scored candidates and applies the exclusions, the lineage, negative and tuner limits
// and the technique diversity described above (exposed for tests); `query` supplies
// exclude_kernels, near_copy and max_tuner_pairs, `source_of` a fast kernel's source by id.
std::vector<RetrievedPair> select_diverse(
    std::vector<RetrievedPair> candidates, int k, const RetrievalQuery& query = {},
    const std::function<std::string(int64_t kernel_id)>& source_of = {});

// Fills the random slot of `chosen` (select_diverse's answer for k): the last positive example
// when k are shown, else one more, with a pair drawn by query.draw_index from the eligible
// `candidates` (kMaxDrawCandidates); the drawn pair carries its propensity. Nothing changes when
// draw_index is unset or nothing is eligible.
void draw_example_slot(std::vector<RetrievedPair>& chosen, std::vector<RetrievedPair> candidates,
                       int k, const RetrievalQuery& query,
                       const std::function<std::string(int64_t kernel_id)>& source_of = {});

}  // namespace kopt::memory
