// Planted known-good pairs among realistic distractors (issue 36, "Memory measured honestly"):
//
//   memory_planted [--repo DIR] [--densities 100,1000,10000] [--seed S] [--seeds 5] [--db PATH]
//
// The corpus is the suite's real known-good kernels: every task's baseline.cu under tasks/ and
// tasks_realworld/, and the `// expect: ok` twins under tests/sandbox/ that name their task.
// Distractor pairs are written into a real SQLite memory (a temporary file): a random task of
// the corpus, its real kernel (or an earlier fast kernel of the same lineage) as the slow side,
// that source plus the code of one technique (bench/memory_measures.cc) as the fast side, a
// lesson in the summarizer's words, speedups 1.04-2.5x (15% negative), tags, usage counters; one
// in five is a tuner pair. For each expert case (planted_measure.cc; "the expert" is this
// bench's author naming the next step from each baseline's stated bottleneck) one pair that
// teaches the expert's technique on a task of the same family is planted at a random position,
// drawn exactly like a distractor: only its technique and family set it apart.
//
// Scored per case, with the planner's state as the query (the task and its baseline, stored):
// kopt's MemoryStore::retrieve as Orchestrator::add_examples calls it (k = 4; lineage, near-copy
// and novelty rules; no profiles, so the bottleneck term is 0), against random pairs of the
// family (20 draws), BM25 alone over every pair (no family, technique or relevance rules) and
// the newest pairs of the family. planted@4: the planted pair among the four; recall@4 and
// nDCG@4 over every positive pair of the family teaching the expert's technique (grade 2) or
// an accepted one (grade 1). Seeds S, S+1, ... (--seeds, 5): one memory per density and seed,
// the scores their mean. CPU only.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "bench/planted_measure.h"
#include "common/strings.h"
#include "memory_store/memory_store.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "memory_planted: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string repo = KOPT_SOURCE_DIR, db;
  std::vector<int64_t> densities = {100, 1000, 10000};
  uint64_t seed = 36;
  int seeds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return fail("missing value for " + arg);
    if (arg == "--repo") {
      repo = argv[++i];
    } else if (arg == "--db") {
      db = argv[++i];
    } else if (arg == "--seed") {
      seed = std::stoull(argv[++i]);
    } else if (arg == "--seeds") {
      seeds = std::max(1, std::stoi(argv[++i]));
    } else if (arg == "--densities") {
      densities.clear();
      for (const auto& d : kopt::split(argv[++i], ',')) densities.push_back(std::stoll(d));
    } else {
      return fail("unknown option " + arg + " (--repo, --densities, --seed, --seeds, --db)");
    }
  }
  auto corpus = kopt::bench::load_corpus(repo);
  if (!corpus) return fail(corpus.error());
  size_t kernels = 0;
  for (const auto& t : *corpus) kernels += t.kernels.size();
  bool temporary = db.empty();
  if (temporary) db = "/tmp/kopt-memory-planted-" + std::to_string(::getpid()) + ".db";
  std::printf("# Planted known-good pairs among distractors\n\n");
  std::printf("date: %s\nseeds: %d from %llu\ncorpus: %zu tasks, %zu known-good kernels\n\n",
              kopt::memory::utc_timestamp().c_str(), seeds, static_cast<unsigned long long>(seed),
              corpus->size(), kernels);
  int code = 0;
  for (int64_t density : densities) {
    std::vector<kopt::bench::PlantedResult> results;
    for (int s = 0; s < seeds && code == 0; ++s) {
      auto result = kopt::bench::run_planted(*corpus, density, seed + static_cast<uint64_t>(s), db);
      if (!result)
        code = fail(result.error());
      else
        results.push_back(std::move(*result));
    }
    if (code != 0) break;
    std::printf("%s", kopt::bench::planted_markdown(kopt::bench::mean_of(results)).c_str());
    std::fflush(stdout);
  }
  if (temporary) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
  }
  return code;
}
