#include "bench/loo_measure.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "memory_store/techniques.h"

namespace kopt::bench {

namespace {

struct Kernel {
  std::string task, source, created_at;
  std::optional<int64_t> parent;
  bool tuner = false;
  double best_us = 0;  // its fastest verified median (0: never verified)
};

// What the night recorded, read once.
struct Night {
  std::map<int64_t, Kernel> kernels;
  std::map<int64_t, std::vector<int64_t>> children;
  std::map<std::string, std::vector<std::string>> tags;  // task -> tags
  std::map<int64_t, std::vector<std::string>> taught;    // pair id -> techniques, as retrieval
};

Status read_kernels(memory::MemoryStore& store, Night& night) {
  auto statement = store.database().prepare(
      "SELECT k.id, t.name, k.source, k.created_at, k.parent_id, k.origin_tuner,"
      " (SELECT min(e.median_us) FROM evaluations e WHERE e.kernel_id = k.id"
      "  AND e.verdict = 'ok' AND e.median_us > 0)"
      " FROM kernels k JOIN tasks t ON t.id = k.task_id ORDER BY k.id");
  if (!statement) return make_error(statement.error());
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    Kernel k;
    k.task = statement->column_text(1);
    k.source = statement->column_text(2);
    k.created_at = statement->column_text(3);
    k.parent = statement->column_optional_int64(4);
    k.tuner = statement->column_int64(5) != 0;
    k.best_us = statement->column_double(6);
    int64_t id = statement->column_int64(0);
    if (k.parent) night.children[*k.parent].push_back(id);
    night.kernels.emplace(id, std::move(k));
  }
  auto tasks = store.list_tasks();
  if (!tasks) return make_error(tasks.error());
  for (const auto& task : *tasks) night.tags[task.name] = task.tags;
  return ok_status();
}

// Each pair's techniques as retrieval reads them: a tuner configuration teaches "tuning", any
// other what its lesson names and its fast kernel's code adds.
Status read_taught(memory::MemoryStore& store, Night& night) {
  auto statement = store.database().prepare(
      "SELECT id, summary, slow_kernel_id, fast_kernel_id FROM pairs ORDER BY id");
  if (!statement) return make_error(statement.error());
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    const Kernel& slow = night.kernels[statement->column_int64(2)];
    const Kernel& fast = night.kernels[statement->column_int64(3)];
    night.taught[statement->column_int64(0)] =
        fast.tuner ? std::vector<std::string>{"tuning"}
                   : memory::pair_techniques_from_code(statement->column_text(1), slow.source,
                                                       fast.source);
  }
  return ok_status();
}

std::set<int64_t> descendants(const Night& night, int64_t id) {
  std::set<int64_t> out;
  std::deque<int64_t> todo = {id};
  while (!todo.empty()) {
    int64_t at = todo.front();
    todo.pop_front();
    auto it = night.children.find(at);
    if (it == night.children.end()) continue;
    for (int64_t child : it->second) {
      if (out.insert(child).second) todo.push_back(child);
    }
  }
  return out;
}

// The techniques the parent's later verified descendants add over its code where they beat it
// by `min_gain`: what a planner at this state would have been right to propose.
std::vector<std::string> gold_of(const Night& night, int64_t parent_id,
                                 const std::string& called_at, const std::set<int64_t>& below,
                                 double min_gain) {
  const Kernel& parent = night.kernels.at(parent_id);
  std::set<std::string> gold;
  if (parent.best_us <= 0) return {};
  for (int64_t id : below) {
    const Kernel& k = night.kernels.at(id);
    if (k.best_us <= 0 || k.created_at < called_at || parent.best_us / k.best_us < min_gain)
      continue;
    for (auto& t : memory::pair_techniques_from_code("", parent.source, k.source)) gold.insert(t);
  }
  return {gold.begin(), gold.end()};
}

bool teaches_any(const std::vector<std::string>& taught, const std::vector<std::string>& gold) {
  return std::any_of(taught.begin(), taught.end(), [&](const std::string& t) {
    return std::find(gold.begin(), gold.end(), t) != gold.end();
  });
}

// The share of the gold techniques that the first four pairs teach between them.
double technique_recall(const Night& night, const std::vector<int64_t>& ranked,
                        const std::vector<std::string>& gold) {
  std::set<std::string> shown;
  for (size_t i = 0; i < std::min<size_t>(4, ranked.size()); ++i) {
    auto it = night.taught.find(ranked[i]);
    if (it != night.taught.end()) shown.insert(it->second.begin(), it->second.end());
  }
  size_t hit = 0;
  for (const auto& t : gold) hit += shown.count(t);
  return gold.empty() ? 0 : static_cast<double>(hit) / static_cast<double>(gold.size());
}

// The four methods' means over the scored queries.
struct Tally {
  std::vector<Mean> recall = std::vector<Mean>(4), ndcg = recall;
};

// Scores one planner state whose gold is known; adds to `tally` and fills `q`'s kopt fields.
Status score_query(memory::MemoryStore& store, Night& night, const std::vector<PairRow>& rows,
                   const std::set<int64_t>& held_out, LooQuery& q, std::mt19937_64& draw,
                   Tally& tally) {
  std::vector<const PairRow*> kept;
  Relevance relevance;
  for (const auto& r : rows) {
    if (held_out.count(r.fast_kernel_id)) continue;
    kept.push_back(&r);
    if (!r.negative && teaches_any(night.taught[r.id], q.gold)) relevance[r.id] = 1;
  }
  const Kernel& parent = night.kernels.at(q.parent_kernel_id);
  const auto& tags = night.tags[q.task];
  std::string family = tags.empty() ? "" : tags.front();
  auto four = kopt_ranking(store, q.task, tags, parent.source, q.parent_kernel_id, 4, held_out);
  if (!four) return make_error(four.error());
  memory::RetrievalQuery words_of;
  words_of.task = q.task;
  words_of.family_tags = tags;
  words_of.kernel_source = parent.source;
  std::vector<std::vector<int64_t>> ranked = {
      *four, {}, bm25_only(kept, query_words(words_of)), newest_of_family(kept, family)};
  for (size_t m = 0; m < ranked.size(); ++m) {
    if (m == 1) {
      Mean r, n;  // the random baseline: the mean of 20 draws
      for (int d = 0; d < 20; ++d) {
        auto top = random_same_family(kept, family, draw);
        r.add(technique_recall(night, top, q.gold));
        n.add(ndcg_at(top, relevance));
      }
      tally.recall[m].add(r.value());
      tally.ndcg[m].add(n.value());
      continue;
    }
    tally.recall[m].add(technique_recall(night, ranked[m], q.gold));
    tally.ndcg[m].add(ndcg_at(ranked[m], relevance));
  }
  q.kopt_recall = technique_recall(night, *four, q.gold);
  q.kopt_ndcg = ndcg_at(*four, relevance);
  q.shown_ids = *four;
  for (int64_t id : *four) q.shown.push_back(join(night.taught[id], "+"));
  return ok_status();
}

}  // namespace

Result<LooResult> run_loo(const std::filesystem::path& db, double min_gain, uint64_t seed) {
  memory::OpenOptions options;
  options.create = false;
  options.read_only = true;
  auto store = memory::MemoryStore::open(db, options);
  if (!store) return make_error(store.error());
  Night night;
  if (auto s = read_kernels(*store, night); !s) return make_error(s.error());
  if (auto s = read_taught(*store, night); !s) return make_error(s.error());
  auto rows = load_pair_rows(*store);
  if (!rows) return make_error(rows.error());
  LooResult result;
  result.pairs = static_cast<int64_t>(rows->size());
  auto calls = store->database().query_int64(
      "SELECT count(*) FROM llm_calls WHERE agent = 'planner' AND status = 'ok'");
  if (!calls) return make_error(calls.error());
  result.planner_calls = *calls;
  // One planner call wrote the plans of one (run, task, parent) at one time.
  auto statement = store->database().prepare(
      "SELECT t.name, p.parent_kernel_id, p.created_at FROM plans p"
      " JOIN tasks t ON t.id = p.task_id WHERE p.parent_kernel_id IS NOT NULL"
      " GROUP BY p.run_id, p.task_id, p.parent_kernel_id, p.created_at ORDER BY min(p.id)");
  if (!statement) return make_error(statement.error());
  Tally tally;
  std::mt19937_64 draw(seed);
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    ++result.queries;
    LooQuery q;
    q.task = statement->column_text(0);
    q.parent_kernel_id = statement->column_int64(1);
    q.created_at = statement->column_text(2);
    if (!night.kernels.count(q.parent_kernel_id)) continue;
    std::set<int64_t> held_out = descendants(night, q.parent_kernel_id);
    q.gold = gold_of(night, q.parent_kernel_id, q.created_at, held_out, min_gain);
    if (q.gold.empty()) continue;
    ++result.scored;
    // The lineage held out: the parent, its ancestors (retrieval leaves those out itself) and
    // its descendants, whose pairs would be the answer.
    held_out.insert(q.parent_kernel_id);
    for (auto at = night.kernels.at(q.parent_kernel_id).parent; at;
         at = night.kernels.at(*at).parent)
      held_out.insert(*at);
    if (auto s = score_query(*store, night, *rows, held_out, q, draw, tally); !s)
      return make_error(s.error());
    result.detail.push_back(std::move(q));
  }
  const std::vector<std::string> names = {"kopt retrieve()", "random same-family", "BM25 only",
                                          "newest of family"};
  for (size_t m = 0; m < names.size(); ++m)
    result.methods.push_back({names[m], 0, tally.recall[m].value(), tally.ndcg[m].value(), 0, 0});
  return result;
}

std::string loo_markdown(const LooResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "%lld planner calls recorded (ok); %lld planner states in the plans table, %lld "
                "with a gold (a later descendant >= the gain); %lld pairs in the memory\n\n"
                "| method | recall@4 (gold techniques shown) | nDCG@4 |\n| --- | ---: | ---: |\n",
                static_cast<long long>(r.planner_calls), static_cast<long long>(r.queries),
                static_cast<long long>(r.scored), static_cast<long long>(r.pairs));
  out += line;
  for (const auto& m : r.methods) {
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f |\n", m.method.c_str(), m.recall_at_4,
                  m.ndcg_at_4);
    out += line;
  }
  out +=
      "\n| task | parent kernel | gold techniques | kopt's four teach | recall@4 | nDCG@4 |\n"
      "| --- | ---: | --- | --- | ---: | ---: |\n";
  for (const auto& q : r.detail) {
    std::vector<std::string> shown;
    for (const auto& s : q.shown) shown.push_back(s.empty() ? "-" : s);
    std::snprintf(line, sizeof line, "| %s | %lld | %s | %s | %.2f | %.2f |\n", q.task.c_str(),
                  static_cast<long long>(q.parent_kernel_id), join(q.gold, ", ").c_str(),
                  join(shown, "; ").c_str(), q.kopt_recall, q.kopt_ndcg);
    out += line;
  }
  return out + "\n";
}

}  // namespace kopt::bench
