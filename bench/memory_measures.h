// Shared parts of the memory measures (issue 36, "Memory measured honestly"): the real kernels
// of the suite as a corpus, realistic slow-to-fast pairs built from them, the ranking metrics
// (recall@4, nDCG@4) and the three baselines every measure is set against (random pairs of the
// query's family, BM25 alone, the newest pairs of the family). Used by bench/memory_planted.cc
// (planted known-good pairs among distractors) and bench/memory_loo.cc (leave-one-out over a
// recorded night), and by their ctest (tests/bench/memory_measures_test.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/memory_store.h"

namespace kopt::bench {

// One known-good kernel of the suite: a task's baseline, or a twin under tests/ marked
// `// expect: ok` with a `// task: NAME` line.
struct CorpusKernel {
  std::string path;  // relative to the repository
  std::string source;
};

struct CorpusTask {
  std::string name;
  std::vector<std::string> tags;  // task.json's, operation family first
  std::string spec_json;
  std::vector<CorpusKernel> kernels;  // the baseline first
};

// Every task of tasks/ and tasks_realworld/ under `repo` with its known-good kernels, by name.
Result<std::vector<CorpusTask>> load_corpus(const std::filesystem::path& repo);

// A code fragment that applies `technique` (a name of memory::technique_names()) as a helper
// the fast kernel adds, and a lesson in the words the summarizer writes; `variant` picks among
// a few phrasings.
std::string technique_snippet(const std::string& technique, int variant);
std::string technique_lesson(const std::string& technique, const std::string& task, int variant);

// Writes pairs into a memory: each pair's slow kernel is a real kernel of its task (or an
// earlier fast kernel of the same lineage), its fast kernel that source plus one technique's
// fragment, its lesson that technique's. Deterministic for one seed.
class PairWriter {
 public:
  PairWriter(memory::MemoryStore& store, const std::vector<CorpusTask>& corpus, uint64_t seed);

  // Stores the tasks (once) and returns the id of `task`'s kernel `index` as the suite holds it.
  Result<int64_t> real_kernel(const CorpusTask& task, size_t index);
  // One pair on `task` teaching `technique` (speedup drawn as for every pair, negative with
  // `negative_share`); `extend`: its slow kernel is the newest fast kernel of a lineage of the
  // task where one exists. Returns the pair id.
  Result<int64_t> add(const CorpusTask& task, const std::string& technique, bool extend,
                      double negative_share = 0.15);
  // One pair on `task` teaching `technique` from the stored kernel `slow` (an id this writer
  // returned).
  Result<int64_t> add_from(const CorpusTask& task, const std::string& technique, int64_t slow,
                           double negative_share = 0.15);
  // One tuner pair: a configuration of a real kernel of `task`, as run_tune records it.
  Result<int64_t> add_tuner(const CorpusTask& task);
  // A random distractor: a task of the corpus, a technique, tuner 20% of the time.
  Result<int64_t> add_random();

  std::mt19937_64& rng() { return rng_; }
  // Ground truth by construction: the technique each technique pair was written to teach.
  const std::map<int64_t, std::string>& taught() const { return taught_; }

 private:
  Status store_tasks();
  memory::MemoryStore& store_;
  const std::vector<CorpusTask>& corpus_;
  std::mt19937_64 rng_;
  bool tasks_stored_ = false;
  std::map<std::string, int64_t> real_ids_;       // "task#index" -> kernel id
  std::map<std::string, int64_t> lineage_tip_;    // task -> newest fast kernel
  std::map<int64_t, std::string> kernel_source_;  // kernels this writer stored
  std::map<int64_t, std::string> taught_;         // pair id -> technique
  int64_t counter_ = 0;
};

// ---- ranking metrics ----

// Graded relevance of a pair id for one query (absent: 0).
using Relevance = std::map<int64_t, double>;

// Share of the relevant pairs (relevance > 0) among the first `k` of `ranked`, over
// min(k, number relevant); 0 when nothing is relevant.
double recall_at(const std::vector<int64_t>& ranked, const Relevance& relevance, size_t k = 4);
// Normalised discounted cumulative gain of the first `k` (gain 2^rel - 1, log2(rank + 1)).
double ndcg_at(const std::vector<int64_t>& ranked, const Relevance& relevance, size_t k = 4);
// The 1-based rank of `id` in `ranked`, 0 when absent.
size_t rank_of(const std::vector<int64_t>& ranked, int64_t id);

// ---- baselines ----

// What the baselines see of one stored pair.
struct PairRow {
  int64_t id = 0;
  int64_t slow_kernel_id = 0, fast_kernel_id = 0;
  std::string task;
  std::vector<std::string> tags;
  std::string document;  // pair_fts's text: summary, tags, task, slow and fast identifiers
  bool negative = false;
};

// Every pair of the memory, oldest first (id order).
Result<std::vector<PairRow>> load_pair_rows(memory::MemoryStore& store);

// The query's words as retrieval forms them (task, family tags, kernel identifiers).
std::vector<std::string> query_words(const memory::RetrievalQuery& query);

// k pairs of the query's family (first tag), drawn uniformly.
std::vector<int64_t> random_same_family(const std::vector<const PairRow*>& rows,
                                        const std::string& family, std::mt19937_64& rng,
                                        size_t k = 4);
// The k best by BM25 of `words` over every pair's document: no family, technique or
// relevance rules.
std::vector<int64_t> bm25_only(const std::vector<const PairRow*>& rows,
                               const std::vector<std::string>& words, size_t k = 4);
// The k newest pairs of the query's family (first tag).
std::vector<int64_t> newest_of_family(const std::vector<const PairRow*>& rows,
                                      const std::string& family, size_t k = 4);

// kopt's retrieval as the planner calls it (Orchestrator::add_examples): the current kernel's
// lineage excluded, near-copies (code_similarity >= 0.92) not shown, its techniques read from
// its code; `k` pairs; returns their ids in order.
Result<std::vector<int64_t>> kopt_ranking(memory::MemoryStore& store, const std::string& task,
                                          const std::vector<std::string>& tags,
                                          const std::string& kernel_source, int64_t kernel_id,
                                          int k, const std::set<int64_t>& exclude_kernels = {});

// One ranking method's means over the queries of a measure.
struct MethodScore {
  std::string method;
  double planted_at_4 = 0;  // share of cases whose planted pair is in the first four
  double recall_at_4 = 0;   // over every pair of the family teaching a right technique
  double ndcg_at_4 = 0;     // graded: the expert's technique 2, an accepted one 1
  double median_rank = 0;   // of the planted pair (0: the method gives no full ranking)
  int not_ranked = 0;       // cases whose planted pair the method never ranks
};

// Mean of several per-query values.
struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double v) {
    sum += v;
    ++n;
  }
  double value() const { return n ? sum / static_cast<double>(n) : 0; }
};

}  // namespace kopt::bench
