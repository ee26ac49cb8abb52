// Does memory help? A CPU benchmark over the real memory store, retrieval and technique labels
// (issue: "memory that compounds"). It prints a markdown report:
//
//   memory_usefulness [--seeds N] [--out FILE]
//
// 1. The technique classifier against a hand-labelled set of lessons (precision and recall).
// 2. A replay experiment: a scripted planner that follows the examples it is shown, over a
//    synthetic speed landscape, with the memory on (it holds the run of a sibling task of the
//    same family) and off (no examples). LLM calls to reach the same %SOL.
// 3. Over the memory-on runs: the share of prompts that show the model its own lineage, the
//    share of example slots that go to tuner pairs, precision@k of the retrieved techniques
//    against what helps next, and recall on the held-out task (its first prompt) -- each with
//    the retrieval rules on and, for comparison, off (no lineage exclusion, no tuner cap).
//
// The landscape assumes (and the result holds only as far as this does): a task's speed is its
// baseline times the gain of every technique applied, each applied once; tasks of one family
// share most of their helpful techniques (the sibling and the held-out task share four of six);
// a technique that does not help costs 3%; the planner proposes one plan per call and the coder
// implements it correctly in one call (2 calls per plan); without examples the planner picks
// uniformly among the techniques it has not tried on the current kernel.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "memory_store/memory_store.h"
#include "memory_store/retrieval.h"
#include "memory_store/techniques.h"

using namespace kopt::memory;

namespace {

// ---- 1. the classifier against labelled lessons ----

struct Labelled {
  const char* lesson;
  std::vector<std::string> labels;
};

// Lessons in the words the summarizer writes (several from real H100 runs, shortened).
const std::vector<Labelled> kLabelled = {
    {"float4 loads quarter the memory instructions of a bandwidth-bound kernel", {"vector_loads"}},
    {"A warp shuffle reduction replaces the shared-memory tree and its barriers",
     {"warp_shuffle", "shared_tiling"}},
    {"An online softmax keeps a running max and sum, so the row is read twice instead of three "
     "times",
     {"online_softmax"}},
    {"The row is held in registers between the max and the sum passes", {"register_resident"}},
    {"Tiles of A and B staged in shared memory, padded by one column to avoid bank conflicts",
     {"shared_tiling", "smem_padding"}},
    {"cp.async double buffering overlaps the next tile's load with this tile's math", {"cp_async"}},
    {"wmma 16x16x16 tensor-core fragments replace the FMA loop", {"tensor_cores"}},
    {"split-K over four blocks fills the SMs for the skinny shape", {"split_k"}},
    {"Bias and ReLU fused into the GEMM epilogue save a round trip", {"fusion"}},
    {"#pragma unroll on the inner loop removes the loop overhead", {"unrolling"}},
    {"BLOCK=512 instead of the declared defaults made it faster", {"launch_config"}},
    {"__expf instead of expf in the exponent", {"fast_math"}},
    {"__half2 arithmetic does two elements per instruction", {"packed_half"}},
    {"Each thread now handles a contiguous chunk, which made the loop simpler", {}},
    {"Fewer __syncthreads barriers, and the comma-separated indices were folded", {}},
};

struct Classifier {
  int true_pos = 0, false_pos = 0, false_neg = 0;
};

Classifier score_classifier() {
  Classifier c;
  for (const auto& l : kLabelled) {
    auto got = techniques_in(l.lesson);
    for (const auto& g : got) {
      (std::count(l.labels.begin(), l.labels.end(), g) ? c.true_pos : c.false_pos)++;
    }
    for (const auto& want : l.labels) {
      if (!std::count(got.begin(), got.end(), want)) ++c.false_neg;
    }
  }
  return c;
}

// ---- 2. the landscape ----

// What a technique looks like in a kernel and in a lesson (both classify to its label).
const std::map<std::string, std::pair<std::string, std::string>> kWords = {
    {"vector_loads", {"float4 v4 = ldg4(p);", "float4 vector loads"}},
    {"warp_shuffle", {"v += __shfl_xor_sync(~0u, v, 16);", "a warp shuffle reduction"}},
    {"online_softmax", {"online_max_sum(m, s, v);", "an online max and sum"}},
    {"shared_tiling", {"__shared__ float tile_s[64];", "tiles in shared memory"}},
    {"smem_padding", {"float padded_tile[33];", "padding against bank conflicts"}},
    {"cp_async", {"cp_async_copy(dst, src);", "cp.async copies"}},
    {"tensor_cores", {"wmma_fragment f;", "tensor-core wmma fragments"}},
    {"split_k", {"int split_k = 4;", "split-K"}},
    {"fusion", {"fused_epilogue(out);", "a fused epilogue"}},
    {"register_resident", {"float row_regs[8]; // register-resident", "the row held in registers"}},
    {"unrolling", {"#pragma unroll", "an unrolled loop"}},
    {"launch_config", {"__launch_bounds__(256)", "launch bounds for occupancy"}},
    {"fast_math", {"__expf(x)", "fast math __expf"}},
    {"packed_half", {"__half2 h2;", "packed __half2 math"}},
};

struct Landscape {
  std::map<std::string, double> gain;  // helpful techniques and their gain
  double baseline_sol = 8;             // %SOL of the baseline
  double gain_of(const std::string& t) const {
    auto it = gain.find(t);
    return it == gain.end() ? 0.97 : it->second;
  }
  double max_sol() const {
    double g = 1;
    for (const auto& [t, v] : gain) g *= v;
    return baseline_sol * g;
  }
};

// The sibling task in memory and the held-out task share four helpful techniques of six.
const Landscape kSibling = {{{"online_softmax", 1.6},
                             {"warp_shuffle", 1.3},
                             {"vector_loads", 1.4},
                             {"register_resident", 1.5},
                             {"shared_tiling", 1.15},
                             {"unrolling", 1.05}},
                            8};
const Landscape kHeldOut = {{{"online_softmax", 1.5},
                             {"warp_shuffle", 1.35},
                             {"vector_loads", 1.45},
                             {"register_resident", 1.4},
                             {"fusion", 1.2},
                             {"fast_math", 1.1}},
                            8};

struct Kernel {
  int64_t id = 0;
  std::set<std::string> applied;
  double sol = 0;
  std::string task;
  std::string source() const {
    std::string s =
        "extern \"C\" __global__ void " + task + "(const float* x, float* y, int n) {\n";
    for (const auto& t : applied) s += "  " + kWords.at(t).first + "\n";
    return s + "}\n";
  }
};

struct RetrievalStats {
  int64_t prompts = 0, prompts_with_own_lineage = 0;
  int64_t slots = 0, tuner_slots = 0;
  int64_t examples = 0, useful_examples = 0;  // precision@k: teaches a helpful unapplied technique
  double first_recall = -1;                   // held-out task's first prompt
};

struct RunResult {
  int calls_to_target = -1;  // -1: not reached within the budget
  RetrievalStats stats;
};

class Replay {
 public:
  Replay(MemoryStore& store, std::mt19937& rng, bool rules)
      : store_(store), rng_(rng), rules_(rules) {}

  // Hill-climbs `task` for at most `max_plans` plans; `memory`: prompts show retrieved pairs.
  RunResult run(const std::string& task, const Landscape& land, bool memory, int max_plans,
                double target_sol, bool tuner_pairs) {
    RunResult result;
    Kernel current;
    current.task = task;
    current.sol = land.baseline_sol;
    current.id = add_kernel(task, current, std::nullopt, false);
    std::map<int64_t, std::set<std::string>> tried;  // per kernel
    int calls = 0;
    for (int plan = 0; plan < max_plans; ++plan) {
      std::vector<std::string> shown;  // techniques of the examples, best first
      if (memory) shown = retrieve(task, current, land, result.stats);
      // The planner: the first example technique not in the kernel and not tried on it, else a
      // uniformly random untried one.
      std::string choice;
      for (const auto& t : shown) {
        if (!current.applied.count(t) && !tried[current.id].count(t)) {
          choice = t;
          break;
        }
      }
      if (choice.empty()) {
        std::vector<std::string> open;
        for (const auto& [t, words] : kWords) {
          if (!current.applied.count(t) && !tried[current.id].count(t)) open.push_back(t);
        }
        if (open.empty()) break;
        choice = open[std::uniform_int_distribution<size_t>(0, open.size() - 1)(rng_)];
      }
      tried[current.id].insert(choice);
      calls += 2;  // the planner's call and the coder's
      Kernel next = current;
      next.applied.insert(choice);
      next.sol = current.sol * land.gain_of(choice);
      double ratio = next.sol / current.sol;
      next.id = add_kernel(task, next, current.id, false);
      if (ratio >= 1.04) {
        add_pair(task, current, next,
                 "Using " + kWords.at(choice).second + " made it " + fmt_ratio(ratio) + " faster.");
        if (tuner_pairs) {
          // The tuner then tries a block size on the new kernel: a pair that teaches a number.
          Kernel tuned = next;
          tuned.sol = next.sol * 1.06;
          std::string source = tuned.source() + "// BLOCK=512\n";
          tuned.id = add_kernel_source(task, source, next.id, true);
          add_pair_ids(task, next.id, tuned.id, 1.06, "BLOCK=512 instead of 256 made it faster.");
        }
        current = next;
      }
      if (current.sol >= target_sol && result.calls_to_target < 0) {
        result.calls_to_target = calls;
        break;
      }
    }
    return result;
  }

 private:
  static std::string fmt_ratio(double r) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2fx", r);
    return text;
  }

  std::vector<std::string> retrieve(const std::string& task, const Kernel& current,
                                    const Landscape& land, RetrievalStats& stats) {
    RetrievalQuery q;
    q.task = task;
    q.family_tags = {"softmax", "memory-bound", "fp32"};
    q.gpu_arch = "sm_90";
    q.kernel_source = current.source();
    q.k = 4;
    q.include_negatives = false;
    if (rules_) {
      q.current_kernel_id = current.id;
      q.current_techniques = techniques_in(q.kernel_source);
    } else {
      q.max_tuner_pairs = 1000;
    }
    auto pairs = store_.retrieve(q);
    if (!pairs) throw std::runtime_error(pairs.error());
    std::vector<int64_t> ids;
    for (const auto& p : *pairs) ids.push_back(p.pair.id);
    (void)store_.mark_retrieved(ids);
    std::set<int64_t> lineage = lineage_of(current.id);
    ++stats.prompts;
    bool own = false;
    std::vector<std::string> shown;
    std::set<std::string> helpful_open;
    for (const auto& [t, g] : land.gain) {
      if (!current.applied.count(t)) helpful_open.insert(t);
    }
    std::set<std::string> recalled;
    for (const auto& p : *pairs) {
      ++stats.slots;
      if (p.tuner_only) ++stats.tuner_slots;
      if (lineage.count(p.pair.fast_kernel_id)) own = true;
      ++stats.examples;
      bool useful = false;
      for (const auto& t : p.techniques) {
        if (helpful_open.count(t)) {
          useful = true;
          recalled.insert(t);
        }
        if (kWords.count(t)) shown.push_back(t);
      }
      if (useful) ++stats.useful_examples;
    }
    if (own) ++stats.prompts_with_own_lineage;
    if (stats.first_recall < 0) {
      stats.first_recall = static_cast<double>(recalled.size()) /
                           static_cast<double>(std::max<size_t>(1, helpful_open.size()));
    }
    return shown;
  }

  std::set<int64_t> lineage_of(int64_t id) {
    std::set<int64_t> out;
    for (std::optional<int64_t> at = id; at && out.insert(*at).second;) {
      auto k = store_.kernel(*at);
      if (!k || !*k) break;
      at = (*k)->parent_id;
    }
    return out;
  }

  int64_t add_kernel(const std::string& task, const Kernel& k, std::optional<int64_t> parent,
                     bool tuner) {
    return add_kernel_source(task, k.source(), parent, tuner);
  }

  int64_t add_kernel_source(const std::string& task, const std::string& source,
                            std::optional<int64_t> parent, bool tuner) {
    KernelRecord record;
    record.task = task;
    record.source = source;
    record.parent_id = parent;
    record.origin = {tuner ? kopt::Origin::kTuner : kopt::Origin::kCoder, tuner ? "" : "scripted",
                     "", tuner};
    auto id = store_.add_kernel(record);
    if (!id) throw std::runtime_error(id.error());
    return *id;
  }

  void add_pair(const std::string& task, const Kernel& slow, const Kernel& fast,
                const std::string& lesson) {
    add_pair_ids(task, slow.id, fast.id, fast.sol / slow.sol, lesson);
  }

  void add_pair_ids(const std::string& task, int64_t slow, int64_t fast, double speedup,
                    const std::string& lesson) {
    PairRecord pair;
    pair.task = task;
    pair.slow_kernel_id = slow;
    pair.fast_kernel_id = fast;
    pair.speedup = speedup;
    pair.gpu_model = "NVIDIA H100 80GB HBM3";
    pair.gpu_arch = "sm_90a";
    pair.summary = lesson;
    pair.tags = {"softmax", "memory-bound", "fp32"};
    auto id = store_.add_pair(pair);
    if (!id) throw std::runtime_error(id.error());
  }

  MemoryStore& store_;
  std::mt19937& rng_;
  bool rules_;
};

void add_task(MemoryStore& store, const std::string& name) {
  TaskRecord t;
  t.name = name;
  t.spec_hash = "synthetic-" + name;
  t.tags = {"softmax", "memory-bound", "fp32"};
  t.spec_json = "{}";
  if (auto id = store.upsert_task(t); !id) throw std::runtime_error(id.error());
}

struct Summary {
  std::vector<int> calls;
  int unreached = 0;
  RetrievalStats stats;
  double median() const {
    if (calls.empty()) return 0;
    auto sorted = calls;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  }
  double mean() const {
    double sum = 0;
    for (int c : calls) sum += c;
    return calls.empty() ? 0 : sum / static_cast<double>(calls.size());
  }
};

// One seed: a fresh memory, the sibling's cold run stored, then the held-out task's run.
RunResult one_seed(const std::filesystem::path& dir, unsigned seed, bool memory, bool rules,
                   double target) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = MemoryStore::open(dir / "m.db");
  if (!store) throw std::runtime_error(store.error());
  add_task(*store, "sibling_softmax");
  add_task(*store, "held_out_softmax");
  std::mt19937 rng(seed);
  Replay replay(*store, rng, rules);
  // The sibling's night: cold (random plans), long enough to find its helpful techniques.
  replay.run("sibling_softmax", kSibling, false, 40, 1e9, /*tuner_pairs=*/true);
  return replay.run("held_out_softmax", kHeldOut, memory, 60, target, /*tuner_pairs=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 100;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) {
      seeds = std::atoi(argv[++i]);
    } else if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: memory_usefulness [--seeds N] [--out FILE]\n");
      return 2;
    }
  }
  if (seeds <= 0) {
    std::fprintf(stderr, "memory_usefulness: --seeds must be positive\n");
    return 2;
  }
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("kopt-memory-usefulness-" + std::to_string(getpid()));
  // The same %SOL for both: 80% of what the held-out landscape allows.
  double target = 0.8 * kHeldOut.max_sol();
  std::map<std::string, Summary> summaries;
  struct Arm {
    std::string name;
    bool memory, rules;
  };
  const std::vector<Arm> arms = {{"memory off", false, true},
                                 {"memory on, retrieval rules off (before)", true, false},
                                 {"memory on", true, true}};
  for (const Arm& arm : arms) {
    Summary& s = summaries[arm.name];
    for (int seed = 1; seed <= seeds; ++seed) {
      RunResult r = one_seed(dir, static_cast<unsigned>(seed), arm.memory, arm.rules, target);
      if (r.calls_to_target >= 0) {
        s.calls.push_back(r.calls_to_target);
      } else {
        ++s.unreached;
      }
      RetrievalStats& t = s.stats;
      t.prompts += r.stats.prompts;
      t.prompts_with_own_lineage += r.stats.prompts_with_own_lineage;
      t.slots += r.stats.slots;
      t.tuner_slots += r.stats.tuner_slots;
      t.examples += r.stats.examples;
      t.useful_examples += r.stats.useful_examples;
      if (r.stats.first_recall >= 0)
        t.first_recall = std::max(0.0, t.first_recall) + r.stats.first_recall;
    }
  }
  std::filesystem::remove_all(dir);

  Classifier c = score_classifier();
  auto pct = [](double a, double b) { return b > 0 ? 100.0 * a / b : 0.0; };
  std::ostringstream md;
  char line[512];
  md << "# Does memory help? (bench/memory_usefulness)\n\n";
  std::snprintf(line, sizeof line,
                "Technique classifier on %zu labelled lessons: precision %.0f%%, recall %.0f%% "
                "(%d right labels, %d wrong, %d missed).\n\n",
                kLabelled.size(), pct(c.true_pos, c.true_pos + c.false_pos),
                pct(c.true_pos, c.true_pos + c.false_neg), c.true_pos, c.false_pos, c.false_neg);
  md << line;
  std::snprintf(line, sizeof line,
                "Replay: %d seeds; the held-out task starts at %.1f%% SOL and the target is %.1f%% "
                "(80%% of what its landscape allows); budget 60 plans (120 calls).\n\n",
                seeds, kHeldOut.baseline_sol, target);
  md << line;
  md << "| arm | runs reaching the target | LLM calls to the target (median) | (mean) | "
        "prompts showing the model its own lineage | examples per prompt | tuner-pair share of "
        "slots | "
        "precision@4 of retrieved techniques | recall on the held-out task's first prompt |\n";
  md << "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const Arm& arm : arms) {
    const Summary& s = summaries[arm.name];
    const RetrievalStats& t = s.stats;
    bool shown = arm.memory;
    char per_prompt[32] = "-";
    if (shown) {
      std::snprintf(
          per_prompt, sizeof per_prompt, "%.2f",
          static_cast<double>(t.slots) / static_cast<double>(std::max<int64_t>(1, t.prompts)));
    }
    std::snprintf(
        line, sizeof line, "| %s | %zu of %d | %.0f | %.1f | %s | %s | %s | %s | %s |\n",
        arm.name.c_str(), s.calls.size(), seeds, s.median(), s.mean(),
        shown ? (std::to_string(
                     static_cast<int>(std::lround(pct(t.prompts_with_own_lineage, t.prompts)))) +
                 "%")
                    .c_str()
              : "-",
        per_prompt,
        shown ? (std::to_string(static_cast<int>(std::lround(pct(t.tuner_slots, t.slots)))) + "%")
                    .c_str()
              : "-",
        shown ? (std::to_string(static_cast<int>(std::lround(pct(t.useful_examples, t.examples)))) +
                 "%")
                    .c_str()
              : "-",
        shown
            ? (std::to_string(static_cast<int>(std::lround(100.0 * t.first_recall / seeds))) + "%")
                  .c_str()
            : "-");
    md << line;
  }
  const Summary& off = summaries["memory off"];
  const Summary& on = summaries["memory on"];
  std::snprintf(line, sizeof line,
                "\nMemory on needs %.0f%% fewer LLM calls than memory off to reach the same %%SOL "
                "(mean %.1f against %.1f; goal: at least 30%% fewer).\n",
                100.0 * (1.0 - on.mean() / std::max(1e-9, off.mean())), on.mean(), off.mean());
  md << line;
  std::string text = md.str();
  std::fputs(text.c_str(), stdout);
  if (!out.empty()) std::ofstream(out) << text;
  return 0;
}
