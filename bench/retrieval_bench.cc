// Retrieval latency on a generated memory of 100,000 pairs (issue 5 asks for under 10 ms).
//
//   retrieval_bench [--pairs N] [--queries N] [--db PATH] [--seed S] [--profiled PERCENT]
//
// Generates a memory shaped like a long-running daemon's: 200 tasks in 20 operation families,
// each task a tree of kernel lineages, sources and summaries drawn from a CUDA vocabulary, 15%
// negative pairs; then times MemoryStore::retrieve for random tasks and kernels (k = 4, negatives
// included) after a warm-up, and prints the distribution with the machine it ran on. CPU only.
// --profiled P: P% of the kernels get an evaluation with hardware counters (one of four
// profiles, each of another bottleneck class) and every query a class, so retrieval also reads
// each candidate's slow-kernel profile and matches classes, as the daemon's does.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "memory_store/memory_store.h"
#include "sandbox/profile_bottleneck.h"

using kopt::make_error;
using kopt::Status;
using namespace kopt::memory;

namespace {

const std::vector<std::string> kFamilies = {
    "elementwise", "reduction", "normalization", "softmax", "matmul",   "attention",  "scan",
    "transpose",   "embedding", "convolution",   "pooling", "loss",     "activation", "gather",
    "scatter",     "sort",      "topk",          "rope",    "quantize", "histogram"};

const std::vector<std::string> kIdentifiers = {"__shfl_xor_sync",
                                               "__shfl_down_sync",
                                               "__syncthreads",
                                               "__ldg",
                                               "__expf",
                                               "__fdividef",
                                               "rsqrtf",
                                               "fmaxf",
                                               "fminf",
                                               "atomicAdd",
                                               "atomicMax",
                                               "float4",
                                               "float2",
                                               "half2",
                                               "__nv_bfloat16",
                                               "__half",
                                               "wmma",
                                               "mma_sync",
                                               "load_matrix_sync",
                                               "store_matrix_sync",
                                               "cp_async",
                                               "__pipeline_commit",
                                               "__pipeline_wait_prior",
                                               "cooperative_groups",
                                               "thread_block",
                                               "tiled_partition",
                                               "BlockReduce",
                                               "WarpReduce",
                                               "BlockScan",
                                               "TempStorage",
                                               "partial",
                                               "tile",
                                               "smem",
                                               "acc",
                                               "row_max",
                                               "row_sum",
                                               "inv_sum",
                                               "lane",
                                               "warp_id",
                                               "stride",
                                               "offset",
                                               "mask",
                                               "vec",
                                               "sum",
                                               "mean",
                                               "var",
                                               "eps",
                                               "scale",
                                               "bias",
                                               "gamma",
                                               "beta",
                                               "weight",
                                               "query",
                                               "key",
                                               "value",
                                               "logits",
                                               "probs",
                                               "labels",
                                               "loss",
                                               "grad",
                                               "prefix",
                                               "carry",
                                               "bucket",
                                               "bins",
                                               "pivot",
                                               "heap",
                                               "cos_cache",
                                               "sin_cache",
                                               "theta",
                                               "qscale",
                                               "zero_point",
                                               "__launch_bounds__",
                                               "unroll",
                                               "restrict",
                                               "ldmatrix",
                                               "wgmma",
                                               "setmaxnreg",
                                               "tma",
                                               "mbarrier",
                                               "cluster",
                                               "dsmem",
                                               "double_buffer",
                                               "swizzle",
                                               "bank_conflict",
                                               "padding",
                                               "transpose_tile"};

const std::vector<std::string> kTechniques = {"warp shuffles replace the shared-memory tree",
                                              "float4 vectorized loads",
                                              "one warp per row instead of one block",
                                              "online softmax keeps one pass over the row",
                                              "tensor core mma tiles",
                                              "double-buffered shared memory with cp.async",
                                              "padding removes shared-memory bank conflicts",
                                              "fewer __syncthreads barriers",
                                              "fused the two launches into one kernel",
                                              "grid-stride loop with fewer blocks",
                                              "register tiling of the accumulator",
                                              "__ldg read-only cache for the weights",
                                              "atomics replaced by a two-pass reduction",
                                              "larger blocks raise occupancy",
                                              "loop unrolled by four",
                                              "bf16 pairs packed as __nv_bfloat162",
                                              "swizzled tiles for the transpose",
                                              "decoupled look-back scan in one pass"};

const std::vector<std::string> kArchs = {"sm_80", "sm_86", "sm_89", "sm_90"};

std::string kernel_text(std::mt19937_64& rng, const std::string& name) {
  std::string body;
  for (int i = 0; i < 30; ++i) body += kIdentifiers[rng() % kIdentifiers.size()] + " ";
  return "extern \"C\" __global__ void " + name + "(const float* x, float* out, int n) {\n  // " +
         body + "\n}\n";
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// Four profiles, one per bottleneck class the daemon meets most, as the worker writes them.
const std::vector<std::string>& canned_profiles() {
  static const std::vector<std::string> profiles = [] {
    std::vector<std::string> out;
    auto make = [&](double dram, double sm, double occupancy, const char* stall) {
      kopt::KernelProfile p;
      p.kernels = 1;
      p.duration_us = 300;
      p.dram_read_bytes = 5e8;
      p.dram_percent = dram;
      p.sm_percent = sm;
      p.occupancy_percent = occupancy;
      p.stalls = {{stall, 60}, {"selected", 10}};
      p.passes = 15;
      out.push_back(kopt::to_json(p).dump());
    };
    make(85, 20, 80, "long_scoreboard");    // DRAM bandwidth
    make(30, 15, 80, "long_scoreboard");    // memory latency
    make(5, 75, 90, "math_pipe_throttle");  // compute
    make(20, 20, 15, "barrier");            // occupancy
    return out;
  }();
  return profiles;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "retrieval_bench: %s\n", message.c_str());
  return 1;
}

Status generate(MemoryStore& store, int64_t pairs, int profiled_percent, std::mt19937_64& rng) {
  constexpr int kTasks = 200;
  auto transaction = store.begin();
  if (!transaction) return make_error(transaction.error());
  std::vector<std::vector<int64_t>> kernels(kTasks);
  for (int t = 0; t < kTasks; ++t) {
    TaskRecord task;
    task.name = "task_" + std::to_string(t);
    task.spec_hash = "h" + std::to_string(t);
    task.tags = {kFamilies[t % kFamilies.size()], t % 3 ? "memory-bound" : "compute-bound",
                 t % 4 ? "fp32" : "bf16"};
    task.spec_json = "{}";
    if (auto id = store.upsert_task(task); !id) return make_error(id.error());
    KernelRecord root;
    root.task = task.name;
    root.source = kernel_text(rng, "baseline_" + std::to_string(t));
    auto id = store.add_kernel(root);
    if (!id) return make_error(id.error());
    kernels[t].push_back(*id);
  }
  for (int64_t i = 0; i < pairs; ++i) {
    int t = static_cast<int>(rng() % kTasks);
    std::string task = "task_" + std::to_string(t);
    // Mostly extend a recent kernel (deep lineages), sometimes branch from an old one.
    auto& pool = kernels[t];
    size_t pick = rng() % 4 ? pool.size() - 1 - rng() % std::min<size_t>(pool.size(), 8)
                            : rng() % pool.size();
    int64_t parent = pool[pick];
    KernelRecord kernel;
    kernel.task = task;
    kernel.parent_id = parent;
    kernel.source = kernel_text(rng, "k" + std::to_string(i));
    auto id = store.add_kernel(kernel);
    if (!id) return make_error(id.error());
    pool.push_back(*id);
    if (static_cast<int>(rng() % 100) < profiled_percent) {
      EvaluationRecord evaluation;
      evaluation.kernel_id = *id;
      evaluation.task = task;
      evaluation.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
      evaluation.verdict = kopt::Verdict::kOk;
      evaluation.median_us = 300;
      evaluation.profile_json = canned_profiles()[rng() % canned_profiles().size()];
      if (auto e = store.add_evaluation(evaluation); !e) return make_error(e.error());
    }
    PairRecord pair;
    pair.task = task;
    pair.slow_kernel_id = parent;
    pair.fast_kernel_id = *id;
    bool negative = rng() % 100 < 15;
    std::uniform_real_distribution<double> gain(1.02, 3.0);
    pair.speedup = negative ? 1.0 / gain(rng) : gain(rng);
    pair.gpu_model = "NVIDIA H100 80GB HBM3";
    pair.gpu_arch = kArchs[rng() % kArchs.size()];
    pair.summary =
        kTechniques[rng() % kTechniques.size()] + "; " + kTechniques[rng() % kTechniques.size()];
    pair.tags = {kFamilies[t % kFamilies.size()], "technique-" + std::to_string(rng() % 30)};
    pair.retrieved_count = static_cast<int64_t>(rng() % 10);
    pair.improved_count = static_cast<int64_t>(rng() % (pair.retrieved_count + 1));
    pair.created_at = "2026-11-22T00:00:00Z";
    if (auto p = store.add_pair(pair); !p) return make_error(p.error());
  }
  return transaction->commit();
}

int bench(const std::string& db, int64_t pairs, int64_t queries, uint64_t seed,
          int profiled_percent) {
  auto store = MemoryStore::open(db);
  if (!store) return fail(store.error());
  std::mt19937_64 rng(seed);
  auto existing = store->database().query_int64("SELECT count(*) FROM pairs");
  if (!existing) return fail(existing.error());
  double generate_s = 0;
  if (*existing < pairs) {
    auto start = std::chrono::steady_clock::now();
    if (auto s = generate(*store, pairs - *existing, profiled_percent, rng); !s)
      return fail(s.error());
    generate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  auto count = store->database().query_int64("SELECT count(*) FROM pairs");
  auto stats = store->stats();
  if (!count || !stats) return fail("cannot count the generated memory");

  // One memo for the whole run, as the daemon keeps one (parsing a profile costs ~15 us).
  auto memo = std::make_shared<kopt::BottleneckMemo>();
  const std::vector<std::string> classes = {"dram_bandwidth", "memory_latency", "compute",
                                            "occupancy_latency"};
  std::vector<RetrievalQuery> batch;
  for (int64_t q = 0; q < queries + 50; ++q) {
    int t = static_cast<int>(rng() % 200);
    RetrievalQuery query;
    query.task = "task_" + std::to_string(t);
    query.family_tags = {kFamilies[t % kFamilies.size()], t % 3 ? "memory-bound" : "compute-bound"};
    query.gpu_arch = kArchs[rng() % kArchs.size()];
    query.kernel_source = kernel_text(rng, "current");
    query.k = 4;
    query.include_negatives = true;
    if (profiled_percent > 0) {
      query.bottleneck = classes[rng() % classes.size()];
      query.bottleneck_of_profile = [memo](const std::string& json) { return (*memo)(json); };
    }
    batch.push_back(query);
  }
  std::vector<double> millis;
  size_t returned = 0;
  for (size_t q = 0; q < batch.size(); ++q) {
    auto start = std::chrono::steady_clock::now();
    auto result = store->retrieve(batch[q]);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!result) return fail(result.error());
    if (q < 50) continue;  // warm-up: statement preparation, page cache
    millis.push_back(ms);
    returned += result->size();
  }
  double mean = 0;
  for (double m : millis) mean += m;
  mean /= static_cast<double>(millis.size());

  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::printf("# kopt retrieval benchmark\n\n");
  std::printf("date: %s\nmachine: %s, %s, %ld cores\nsqlite: %s\n\n", utc_timestamp().c_str(), host,
              cpu_model().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), sqlite3_libversion());
  std::printf(
      "memory: %lld pairs, %lld kernels, %lld tasks, %.1f MiB%s\n", static_cast<long long>(*count),
      static_cast<long long>(stats->kernels), static_cast<long long>(stats->tasks),
      static_cast<double>(stats->file_bytes) / (1024.0 * 1024.0),
      generate_s > 0 ? (", generated in " + std::to_string(generate_s).substr(0, 5) + " s").c_str()
                     : " (reused)");
  std::printf(
      "queries: %zu timed after 50 warm-up, k = 4, negatives included, %.2f pairs returned "
      "on average\n",
      millis.size(), static_cast<double>(returned) / static_cast<double>(millis.size()));
  std::printf("profiles: %s\n\n",
              profiled_percent > 0
                  ? (std::to_string(profiled_percent) +
                     "% of generated kernels profiled; every query has a bottleneck class")
                        .c_str()
                  : "none (retrieval's bottleneck term off)");
  std::printf("| statistic | retrieval latency (ms) |\n| --- | ---: |\n");
  std::printf("| p50 | %.3f |\n| p90 | %.3f |\n| p99 | %.3f |\n| max | %.3f |\n| mean | %.3f |\n",
              percentile(millis, 0.5), percentile(millis, 0.9), percentile(millis, 0.99),
              percentile(millis, 1.0), mean);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t pairs = 100000, queries = 1000;
  uint64_t seed = 42;
  int profiled_percent = 0;
  std::string db;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return fail("missing value for " + arg);
    if (arg == "--pairs") {
      pairs = std::stoll(argv[++i]);
    } else if (arg == "--queries") {
      queries = std::stoll(argv[++i]);
    } else if (arg == "--db") {
      db = argv[++i];
    } else if (arg == "--seed") {
      seed = std::stoull(argv[++i]);
    } else if (arg == "--profiled") {
      profiled_percent = std::clamp(std::stoi(argv[++i]), 0, 100);
    } else {
      return fail("unknown option " + arg + " (--pairs, --queries, --db, --seed, --profiled)");
    }
  }
  // Without --db the memory is generated in a temporary file and removed afterwards.
  bool temporary = db.empty();
  if (temporary) db = "/tmp/kopt-retrieval-bench-" + std::to_string(::getpid()) + ".db";
  int code = bench(db, pairs, queries, seed, profiled_percent);
  if (temporary) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
  }
  return code;
}
