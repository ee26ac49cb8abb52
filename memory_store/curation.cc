// Keeping the memory useful as it grows: caps per task and per operation family, applied by
// dropping the least useful pairs first. The policy, as prune() applies it:
//   keep  the most useful pairs of each group up to its cap, usefulness being the measured
//         credit (improved / retrieved, credited once per retrieval and only for a child at
//         least 1.04x its parent) times the size of the effect;
//   drop  what is over a cap, least useful first: positives per task and per family, negatives
//         per task, and tuner pairs (their fast kernel a tuner configuration) per task under a
//         cap of their own, counted before the others so they never crowd a technique out.
// Kernels and evaluations are never pruned: they are the record of what was measured, and
// exports need them.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "memory_store/memory_store.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

namespace {

// Measured usefulness times the size of the effect; untried pairs count as half useful.
double utility(const PairRecord& pair) {
  double useful = (static_cast<double>(pair.improved_count) + 1.0) /
                  (static_cast<double>(pair.retrieved_count) + 2.0);
  double effect = pair.speedup > 0 ? std::min(std::fabs(std::log2(pair.speedup)), 3.0) : 0;
  return useful * (1.0 + effect);
}

// Most useful first; among equals the newer pair stays.
bool more_useful(const PairRecord& a, const PairRecord& b) {
  double ua = utility(a), ub = utility(b);
  if (ua != ub) return ua > ub;
  return a.id > b.id;
}

}  // namespace

Result<PruneResult> MemoryStore::prune(const PruneCaps& caps) {
  if (caps.max_pairs_per_task < 0 || caps.max_pairs_per_family < 0 ||
      caps.max_negatives_per_task < 0 || caps.max_tuner_pairs_per_task < 0) {
    return make_error("prune: caps must not be negative");
  }
  auto transaction = sql::Transaction::begin_or_join(db_);
  if (!transaction) return make_error(transaction.error());
  std::vector<PairRecord> pairs;
  std::set<int64_t> tuner;  // pairs whose fast kernel is a tuner configuration
  {
    auto statement = db_.cached(std::string("SELECT ") + rows::kPairColumns +
                                ", fk.origin_tuner FROM pairs p JOIN tasks t ON t.id = p.task_id"
                                " JOIN kernels fk ON fk.id = p.fast_kernel_id ORDER BY p.id");
    while (true) {
      auto row = statement->step();
      if (!row) return make_error("prune: " + row.error());
      if (!*row) break;
      pairs.push_back(rows::read_pair(*statement));
      if (statement->column_int64(rows::kPairColumnCount) != 0) tuner.insert(pairs.back().id);
    }
  }
  std::sort(pairs.begin(), pairs.end(), more_useful);

  // Walk from most to least useful; a pair goes when a group it belongs to is already full.
  // Groups: positives of a task, positives of a family, negatives of a task.
  std::map<std::string, int64_t> kept;
  PruneResult result;
  for (const auto& pair : pairs) {
    std::string family = pair.tags.empty() ? std::string() : pair.tags.front();
    std::string reason;
    if (tuner.count(pair.id) && kept["tuner:" + pair.task] >= caps.max_tuner_pairs_per_task) {
      reason = "tuner pairs of task " + pair.task + " over " +
               std::to_string(caps.max_tuner_pairs_per_task);
    } else if (pair.is_negative) {
      if (kept["neg:" + pair.task] >= caps.max_negatives_per_task) {
        reason = "negatives of task " + pair.task + " over " +
                 std::to_string(caps.max_negatives_per_task);
      }
    } else if (kept["task:" + pair.task] >= caps.max_pairs_per_task) {
      reason = "task " + pair.task + " over " + std::to_string(caps.max_pairs_per_task);
    } else if (!family.empty() && kept["family:" + family] >= caps.max_pairs_per_family) {
      reason = "family " + family + " over " + std::to_string(caps.max_pairs_per_family);
    }
    if (!reason.empty()) {
      result.removed.push_back(pair);
      result.reasons.push_back(reason);
      continue;
    }
    if (tuner.count(pair.id)) ++kept["tuner:" + pair.task];
    if (pair.is_negative) {
      ++kept["neg:" + pair.task];
    } else {
      ++kept["task:" + pair.task];
      if (!family.empty()) ++kept["family:" + family];
    }
  }
  // Report least useful first, the order they are dropped in.
  std::reverse(result.removed.begin(), result.removed.end());
  std::reverse(result.reasons.begin(), result.reasons.end());
  if (caps.dry_run) return result;
  for (const auto& pair : result.removed) {
    auto statement = db_.cached("DELETE FROM pairs WHERE id = ?1");
    statement->bind(1, pair.id);
    if (auto s = statement->run(); !s) return make_error("prune: " + s.error());
  }
  if (auto s = transaction->commit(); !s) return make_error(s.error());
  return result;
}

}  // namespace kopt::memory
