// Leave-one-out ranking over a recorded night (issue 36, "Memory measured honestly"):
//
//   memory_loo --db PATH [--min-gain 1.04] [--seed S]
//
// PATH is any kopt memory database (opened read-only). Each planner call's state, read from the
// plans table (the task and the parent kernel its plans were written for, at the call's time),
// is a query. Its gold: the techniques that the parent's verified descendants created after the
// call add over the parent's code (memory::pair_techniques_from_code) where they beat the parent
// by at least --min-gain; a state with no such descendant is not scored. The query's lineage
// (the parent, its ancestors, its descendants) is held out of the memory; kopt's retrieval as
// the planner calls it ranks the rest against random pairs of the family (20 draws), BM25 alone
// and the newest pairs of the family. recall@4: the share of the gold techniques that the first
// four pairs teach; nDCG@4: a pair teaching any gold technique counts 1. CPU only.
//
// The measure is only as good as the night it reads: on a night of the replaying fake model the
// gold is the script's, and the number measures the plumbing, not retrieval quality.
#include <cstdio>
#include <string>

#include "bench/loo_measure.h"
#include "memory_store/memory_store.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "memory_loo: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db;
  double min_gain = 1.04;
  uint64_t seed = 36;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return fail("missing value for " + arg);
    if (arg == "--db") {
      db = argv[++i];
    } else if (arg == "--min-gain") {
      min_gain = std::stod(argv[++i]);
    } else if (arg == "--seed") {
      seed = std::stoull(argv[++i]);
    } else {
      return fail("unknown option " + arg + " (--db, --min-gain, --seed)");
    }
  }
  if (db.empty()) return fail("--db PATH is required (a kopt memory database)");
  auto result = kopt::bench::run_loo(db, min_gain, seed);
  if (!result) return fail(result.error());
  std::printf("# Leave-one-out ranking over %s\n\ndate: %s\nmin gain: %.2fx\n\n", db.c_str(),
              kopt::memory::utc_timestamp().c_str(), min_gain);
  std::printf("%s", kopt::bench::loo_markdown(*result).c_str());
  return 0;
}
