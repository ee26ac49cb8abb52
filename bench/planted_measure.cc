#include "bench/planted_measure.h"

#include <algorithm>
#include <cstdio>

#include "common/strings.h"
#include "memory_store/techniques.h"

namespace kopt::bench {

namespace fs = std::filesystem;

const std::vector<ExpertCase>& expert_cases() {
  // The expert is this bench's author (helper memory-measures, issue 36), naming the next step
  // from each kernel's bottleneck as its own header comment states it; "also_right" are steps an
  // expert would accept as a good first move too. Single-kernel memory-bound tasks at their
  // H100 shapes are limited by load issue and passes over memory; GEMMs by CUDA-core math.
  static const std::vector<ExpertCase> kCases = {
      {"axpy", 0, "vector_loads", {}, "scalar fp32 loads, one element per thread"},
      {"gelu", 0, "vector_loads", {"fast_math"}, "scalar loads, tanhf per element"},
      {"swiglu", 0, "packed_half", {"vector_loads"}, "scalar bf16 loads and fp32 math"},
      {"softmax", 0, "online_softmax", {"warp_shuffle"}, "three passes over the row, tree"},
      {"cross_entropy", 0, "online_softmax", {"warp_shuffle"}, "max and sum in two passes"},
      {"layernorm",
       0,
       "register_resident",
       {"vector_loads", "warp_shuffle"},
       "three passes over the row, scalar bf16 loads"},
      {"rmsnorm",
       0,
       "vector_loads",
       {"register_resident", "packed_half"},
       "scalar bf16 loads, two passes"},
      {"residual_rmsnorm",
       0,
       "vector_loads",
       {"register_resident", "packed_half"},
       "scalar bf16 loads of two inputs"},
      {"sgemm", 0, "shared_tiling", {}, "operands straight from global memory"},
      {"transpose", 0, "shared_tiling", {"smem_padding"}, "strided reads, coalesced writes"},
      {"bf16_gemm", 0, "tensor_cores", {"shared_tiling"}, "warp per output on CUDA cores"},
      {"gemm_bias_relu", 0, "tensor_cores", {"shared_tiling"}, "warp per output, CUDA cores"},
      {"matvec", 0, "vector_loads", {"packed_half"}, "scalar bf16 loads along the row"},
      {"embedding", 0, "vector_loads", {}, "bf16 elements copied one by one"},
      {"mse_loss", 0, "warp_shuffle", {"vector_loads"}, "shared tree, two launches"},
      {"prefix_sum", 0, "warp_shuffle", {"vector_loads"}, "Hillis-Steele scan in shared memory"},
      {"rope", 0, "vector_loads", {"packed_half"}, "scalar loads per rotation pair"},
  };
  return kCases;
}

namespace {

const CorpusTask* find_task(const std::vector<CorpusTask>& corpus, const std::string& name) {
  for (const auto& task : corpus) {
    if (task.name == name) return &task;
  }
  return nullptr;
}

// The task the case's pair is planted on: another task of the same family (the transfer a
// memory is for), the case's own task where its family has no other.
const CorpusTask* planted_task(const std::vector<CorpusTask>& corpus, const CorpusTask& query,
                               size_t salt) {
  std::vector<const CorpusTask*> siblings;
  for (const auto& task : corpus) {
    if (task.name != query.name && task.tags.front() == query.tags.front())
      siblings.push_back(&task);
  }
  return siblings.empty() ? &query : siblings[salt % siblings.size()];
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Planted {
  const ExpertCase* expert;
  const CorpusTask* task;
  const CorpusTask* on;
  int64_t pair_id = 0;
  int64_t kernel_id = 0;
};

// Writes the distractors with each case's pair at a random place among them.
Status build_memory(PairWriter& writer, std::vector<Planted>& planted, int64_t density) {
  std::vector<int64_t> at;
  for (size_t i = 0; i < planted.size(); ++i)
    at.push_back(static_cast<int64_t>(writer.rng()() % static_cast<uint64_t>(density + 1)));
  for (int64_t i = 0; i <= density; ++i) {
    for (size_t c = 0; c < planted.size(); ++c) {
      if (at[c] != i) continue;
      auto id = writer.add(*planted[c].on, planted[c].expert->technique, false, 0);
      if (!id) return make_error(id.error());
      planted[c].pair_id = *id;
    }
    if (i == density) break;
    if (auto id = writer.add_random(); !id) return make_error(id.error());
  }
  return ok_status();
}

// Every positive pair of the case's family that teaches the expert's technique (grade 2) or
// an accepted one (grade 1), by construction (the writer's record, not the classifier).
Relevance relevance_of(const ExpertCase& expert, const std::string& family,
                       const std::vector<PairRow>& rows, const PairWriter& writer) {
  Relevance relevance;
  for (const auto& row : rows) {
    auto taught = writer.taught().find(row.id);
    if (row.negative || taught == writer.taught().end() || row.tags.empty() ||
        row.tags.front() != family)
      continue;
    if (taught->second == expert.technique) relevance[row.id] = 2;
    for (const auto& t : expert.also_right) {
      if (taught->second == t) relevance[row.id] = 1;
    }
  }
  return relevance;
}

// The four methods' scores over the cases.
struct Tally {
  static constexpr size_t kMethods = 4;  // kopt, random, BM25, newest
  std::vector<Mean> at4 = std::vector<Mean>(kMethods), recall = at4, ndcg = at4;
  std::vector<std::vector<double>> ranks = std::vector<std::vector<double>>(kMethods);
  std::vector<int> unranked = std::vector<int>(kMethods, 0);

  // One ranking's first four; `rank` of the planted pair in its full ranking (0: absent).
  void add(size_t m, const std::vector<int64_t>& top, int64_t planted, const Relevance& relevance,
           size_t rank) {
    at4[m].add(rank_of(top, planted) > 0 ? 1 : 0);
    recall[m].add(recall_at(top, relevance));
    ndcg[m].add(ndcg_at(top, relevance));
    if (rank > 0)
      ranks[m].push_back(static_cast<double>(rank));
    else
      ++unranked[m];
  }
};

// The memory a case is ranked in, and what the baselines read of it.
struct Memory {
  memory::MemoryStore& store;
  const PairWriter& writer;
  const std::vector<PairRow>& rows;
  std::vector<const PairRow*> all;
  std::map<int64_t, const PairRow*> by_id;
};

// Ranks the memory for one case with kopt's retrieval and the baselines; adds to `tally`.
Result<CaseOutcome> score_case(const Planted& p, Memory& memory, std::mt19937_64& draw,
                               Tally& tally) {
  const ExpertCase& expert = *p.expert;
  const std::string family = p.task->tags.front();
  Relevance relevance = relevance_of(expert, family, memory.rows, memory.writer);
  const std::string& source = p.task->kernels[expert.kernel].source;
  auto full = kopt_ranking(memory.store, p.task->name, p.task->tags, source, p.kernel_id, 100);
  auto four = kopt_ranking(memory.store, p.task->name, p.task->tags, source, p.kernel_id, 4);
  if (!full) return make_error(full.error());
  if (!four) return make_error(four.error());
  memory::RetrievalQuery words_of;
  words_of.task = p.task->name;
  words_of.family_tags = p.task->tags;
  words_of.kernel_source = source;
  const auto& all = memory.all;
  std::vector<int64_t> bm25_full = bm25_only(all, query_words(words_of), all.size());
  std::vector<int64_t> bm25(bm25_full.begin(), bm25_full.begin() + std::min<size_t>(4, all.size()));

  tally.add(0, *four, p.pair_id, relevance, rank_of(*full, p.pair_id));
  // The random baseline: the mean of 20 draws, so one lucky draw does not decide it.
  Tally random;
  for (int d = 0; d < 20; ++d)
    random.add(1, random_same_family(all, family, draw), p.pair_id, relevance, 0);
  tally.at4[1].add(random.at4[1].value());
  tally.recall[1].add(random.recall[1].value());
  tally.ndcg[1].add(random.ndcg[1].value());
  tally.add(2, bm25, p.pair_id, relevance, rank_of(bm25_full, p.pair_id));
  tally.add(3, newest_of_family(all, family), p.pair_id, relevance, 0);

  CaseOutcome outcome{
      p.task->name, expert.technique,          p.on->name, p.pair_id,
      p.kernel_id,  rank_of(*full, p.pair_id), {},         static_cast<int>(relevance.size())};
  outcome.bm25_rank = rank_of(bm25_full, p.pair_id);
  auto describe = [&](int64_t id) {
    auto taught = memory.writer.taught().find(id);
    const PairRow& row = *memory.by_id.at(id);
    return (taught != memory.writer.taught().end() ? taught->second : "tuning") + " (" + row.task +
           (row.negative ? ", neg)" : ")");
  };
  for (int64_t id : *four) outcome.shown.push_back(describe(id));
  for (int64_t id : bm25) outcome.bm25_shown.push_back(describe(id));
  return outcome;
}

// A fresh memory at `db` with the distractors and each case's planted pair.
Status write_memory(memory::MemoryStore& store, PairWriter& writer, std::vector<Planted>& planted,
                    int64_t density) {
  auto transaction = store.begin();
  if (!transaction) return make_error(transaction.error());
  for (auto& p : planted) {
    auto id = writer.real_kernel(*p.task, p.expert->kernel);
    if (!id) return make_error(id.error());
    p.kernel_id = *id;
  }
  if (auto s = build_memory(writer, planted, density); !s) return make_error(s.error());
  return transaction->commit();
}

}  // namespace

Result<PlantedResult> run_planted(const std::vector<CorpusTask>& corpus, int64_t density,
                                  uint64_t seed, const fs::path& db,
                                  const std::vector<ExpertCase>& cases) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix, ec);
  auto store = memory::MemoryStore::open(db);
  if (!store) return make_error(store.error());
  PairWriter writer(*store, corpus, seed);
  std::vector<Planted> planted;
  for (size_t c = 0; c < cases.size(); ++c) {
    const CorpusTask* task = find_task(corpus, cases[c].task);
    if (!task) return make_error("expert case: no task " + cases[c].task + " in the corpus");
    planted.push_back({&cases[c], task, planted_task(corpus, *task, c)});
  }
  if (auto s = write_memory(*store, writer, planted, density); !s) return make_error(s.error());
  auto rows = load_pair_rows(*store);
  if (!rows) return make_error(rows.error());
  Memory memory{*store, writer, *rows, {}, {}};
  for (const auto& row : *rows) {
    memory.all.push_back(&row);
    memory.by_id[row.id] = &row;
  }
  PlantedResult result;
  result.density = density;
  result.pairs = static_cast<int64_t>(rows->size());
  Tally tally;
  std::mt19937_64 draw(seed ^ 0x5eedULL);
  for (const auto& p : planted) {
    auto outcome = score_case(p, memory, draw, tally);
    if (!outcome) return make_error(outcome.error());
    result.cases.push_back(std::move(*outcome));
  }
  const std::vector<std::string> names = {"kopt retrieve()", "random same-family", "BM25 only",
                                          "newest of family"};
  for (size_t m = 0; m < names.size(); ++m) {
    bool ranked = m == 0 || m == 2;
    result.methods.push_back({names[m], tally.at4[m].value(), tally.recall[m].value(),
                              tally.ndcg[m].value(), ranked ? median(tally.ranks[m]) : 0,
                              ranked ? tally.unranked[m] : 0});
  }
  return result;
}

PlantedResult mean_of(const std::vector<PlantedResult>& results) {
  PlantedResult mean = results.front();
  mean.seeds = static_cast<int>(results.size());
  for (size_t m = 0; m < mean.methods.size(); ++m) {
    MethodScore& s = mean.methods[m];
    s = {s.method, 0, 0, 0, 0, 0};
    for (const auto& r : results) {
      s.planted_at_4 += r.methods[m].planted_at_4 / static_cast<double>(results.size());
      s.recall_at_4 += r.methods[m].recall_at_4 / static_cast<double>(results.size());
      s.ndcg_at_4 += r.methods[m].ndcg_at_4 / static_cast<double>(results.size());
      s.median_rank += r.methods[m].median_rank / static_cast<double>(results.size());
      s.not_ranked += r.methods[m].not_ranked;
    }
  }
  return mean;
}

std::string planted_markdown(const PlantedResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "### %lld distractors (%lld pairs in the memory, %zu cases, mean of %d seeds)\n\n"
                "| method | planted@4 | recall@4 | nDCG@4 | median rank of planted | not ranked |\n"
                "| --- | ---: | ---: | ---: | ---: | ---: |\n",
                static_cast<long long>(r.density), static_cast<long long>(r.pairs), r.cases.size(),
                r.seeds);
  out += line;
  for (const auto& m : r.methods) {
    std::string rank = m.median_rank > 0 ? std::to_string(static_cast<int>(m.median_rank)) : "-";
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.2f | %s | %s |\n", m.method.c_str(),
                  m.planted_at_4, m.recall_at_4, m.ndcg_at_4, rank.c_str(),
                  m.method == "kopt retrieve()" || m.method == "BM25 only"
                      ? std::to_string(m.not_ranked).c_str()
                      : "-");
    out += line;
  }
  out +=
      "\nThe first seed's cases (not ranked: counted over all seeds' cases):\n\n"
      "| case (task: expert's step) | planted on | kopt rank | BM25 rank | family pairs right | "
      "kopt's four teach | BM25's four teach |\n| --- | --- | ---: | ---: | ---: | --- | --- |\n";
  for (const auto& c : r.cases) {
    out += "| " + c.task + ": " + c.technique + " | " + c.planted_task + " | " +
           (c.rank ? std::to_string(c.rank) : ">100") + " | " + std::to_string(c.bm25_rank) +
           " | " + std::to_string(c.relevant) + " | " + join(c.shown, "; ") + " | " +
           join(c.bm25_shown, "; ") + " |\n";
  }
  return out + "\n";
}

}  // namespace kopt::bench
