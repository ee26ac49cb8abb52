// Slow-to-fast pairs: adding (with exact duplicates merged), reading, the wins query and the
// usefulness counters that retrieval learns from.
#include <algorithm>

#include "common/scrub_secrets.h"
#include "memory_store/fts_index.h"
#include "memory_store/memory_store.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

// A lineage is one branch of successive improvements: the kernel just below the root of the
// chain fast <- slow <- parent <- ... <- root. Pairs A->B and B->C (A the baseline) share the
// lineage B; a sibling branch A->E is lineage E, so retrieval can show both branches.
Result<int64_t> MemoryStore::lineage_of(int64_t slow_kernel_id, int64_t fast_kernel_id) {
  auto statement = db_.cached(
      "WITH RECURSIVE chain(id, parent_id, depth) AS ("
      "  SELECT id, parent_id, 0 FROM kernels WHERE id = ?1"
      "  UNION ALL SELECT k.id, k.parent_id, c.depth + 1 FROM kernels k"
      "  JOIN chain c ON k.id = c.parent_id WHERE c.depth < 100000)"
      " SELECT id FROM chain ORDER BY depth");
  statement->bind(1, slow_kernel_id);
  std::vector<int64_t> chain = {fast_kernel_id};
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    int64_t id = statement->column_int64(0);
    if (std::find(chain.begin(), chain.end(), id) != chain.end()) break;  // a corrupt cycle
    chain.push_back(id);
  }
  if (chain.size() < 2) {
    return make_error("pair: kernel " + std::to_string(slow_kernel_id) + " does not exist");
  }
  return chain[chain.size() - 2];
}

namespace {

// The stored pair with the same slow kernel, fast kernel and GPU, if any.
Result<std::optional<PairRecord>> find_same_pair(sql::Database& db, const PairRecord& pair) {
  auto statement = db.cached(std::string("SELECT ") + rows::kPairColumns +
                             " FROM pairs p JOIN tasks t ON t.id = p.task_id"
                             " WHERE p.slow_kernel_id = ?1 AND p.fast_kernel_id = ?2"
                             " AND p.gpu_model = ?3");
  statement->bind_all(pair.slow_kernel_id, pair.fast_kernel_id, pair.gpu_model);
  return statement->first_row(rows::read_pair);
}

// `existing` with what the newcomer `pair` adds: its summary where there was none, its new
// tags, the larger counters. Nothing when that changes nothing.
std::optional<PairRecord> merged_pair(const PairRecord& existing, const PairRecord& pair) {
  PairRecord merged = existing;
  if (merged.summary.empty()) merged.summary = pair.summary;
  for (const auto& tag : pair.tags) {
    if (std::find(merged.tags.begin(), merged.tags.end(), tag) == merged.tags.end()) {
      merged.tags.push_back(tag);
    }
  }
  merged.retrieved_count = std::max(merged.retrieved_count, pair.retrieved_count);
  merged.improved_count = std::max(merged.improved_count, pair.improved_count);
  merged.retrieved_count = std::max(merged.retrieved_count, merged.improved_count);
  if (merged.summary == existing.summary && merged.tags == existing.tags &&
      merged.retrieved_count == existing.retrieved_count &&
      merged.improved_count == existing.improved_count) {
    return std::nullopt;
  }
  return merged;
}

Status update_pair(sql::Database& db, const PairRecord& merged) {
  auto update = db.cached(
      "UPDATE pairs SET summary = ?2, tags = ?3, retrieved_count = ?4, improved_count = ?5"
      " WHERE id = ?1");
  update->bind_all(merged.id, scrub_secrets(merged.summary), rows::tags_to_json(merged.tags),
                   merged.retrieved_count, merged.improved_count);
  if (auto s = update->run(); !s) return make_error("pair: " + s.error());
  return ok_status();
}

Result<int64_t> insert_pair(sql::Database& db, const PairRecord& pair, int64_t task_id,
                            int64_t lineage) {
  std::string created_at = pair.created_at.empty() ? utc_timestamp() : pair.created_at;
  auto insert = db.cached(
      "INSERT INTO pairs(slow_kernel_id, fast_kernel_id, task_id, speedup, gpu_model, gpu_arch,"
      " summary, tags, family, is_negative, lineage_root_id, retrieved_count, improved_count,"
      " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  insert->bind_all(pair.slow_kernel_id, pair.fast_kernel_id, task_id, pair.speedup, pair.gpu_model,
                   pair.gpu_arch, scrub_secrets(pair.summary), rows::tags_to_json(pair.tags),
                   pair.tags.empty() ? std::string() : pair.tags.front(), pair.speedup < 1.0,
                   lineage, std::max(pair.retrieved_count, pair.improved_count),
                   pair.improved_count, created_at);
  if (auto s = insert->run(); !s) return make_error("pair: " + s.error());
  return db.last_insert_rowid();
}

// Why `pair` cannot be stored: one kernel twice, no speedup or GPU, a kernel not stored.
Status check_pair(MemoryStore& store, const PairRecord& pair) {
  if (pair.slow_kernel_id == pair.fast_kernel_id) {
    return make_error("pair: the slow and fast kernel are the same kernel");
  }
  if (!(pair.speedup > 0)) return make_error("pair: speedup must be positive");
  if (pair.gpu_model.empty()) return make_error("pair: the GPU model is missing");
  for (int64_t id : {pair.slow_kernel_id, pair.fast_kernel_id}) {
    auto k = store.kernel(id);
    if (!k) return make_error(k.error());
    if (!*k) return make_error("pair: kernel " + std::to_string(id) + " does not exist");
  }
  return ok_status();
}

}  // namespace

Result<int64_t> MemoryStore::add_pair(const PairRecord& pair) {
  if (auto s = check_pair(*this, pair); !s) return make_error(s.error());
  auto tid = task_id(pair.task);
  if (!tid) return make_error("pair: " + tid.error());
  auto transaction = sql::Transaction::begin_or_join(db_);
  if (!transaction) return make_error(transaction.error());
  auto existing = find_same_pair(db_, pair);
  if (!existing) return make_error(existing.error());
  int64_t id = 0;
  if (*existing) {
    // Merge: keep what the memory already learned, add what the newcomer knows.
    std::optional<PairRecord> merged = merged_pair(**existing, pair);
    if (!merged) return (*existing)->id;  // nothing new: leave the row (and the transaction)
    if (auto s = update_pair(db_, *merged); !s) return make_error(s.error());
    id = merged->id;
  } else {
    auto lineage = lineage_of(pair.slow_kernel_id, pair.fast_kernel_id);
    if (!lineage) return make_error(lineage.error());
    auto inserted = insert_pair(db_, pair, *tid, *lineage);
    if (!inserted) return make_error(inserted.error());
    id = *inserted;
  }
  return index_and_commit(db_, *transaction, id, index_pair);
}

Result<std::optional<PairRecord>> MemoryStore::pair(int64_t id) {
  auto statement = db_.cached(std::string("SELECT ") + rows::kPairColumns +
                              " FROM pairs p JOIN tasks t ON t.id = p.task_id WHERE p.id = ?1");
  return statement->bind(1, id).first_row(rows::read_pair);
}

Result<std::vector<PairRecord>> MemoryStore::wins(const WinsFilter& filter) {
  auto statement = db_.cached(std::string("SELECT ") + rows::kPairColumns +
                              " FROM pairs p JOIN tasks t ON t.id = p.task_id"
                              " WHERE p.is_negative = 0 AND (?1 = '' OR t.name = ?1)"
                              " AND (?2 = '' OR p.gpu_arch = ?2"
                              "      OR instr(lower(p.gpu_model), lower(?2)) > 0)"
                              " AND p.speedup >= ?3 AND (?4 = '' OR p.created_at >= ?4)"
                              " ORDER BY p.speedup DESC, p.id LIMIT ?5");
  statement->bind_all(filter.task, filter.gpu, filter.min_speedup, filter.since, filter.limit);
  return statement->collect(rows::read_pair);
}

Status MemoryStore::mark_retrieved(const std::vector<int64_t>& pair_ids) {
  auto transaction = sql::Transaction::begin_or_join(db_);
  if (!transaction) return make_error(transaction.error());
  for (int64_t id : pair_ids) {
    auto update =
        db_.cached("UPDATE pairs SET retrieved_count = retrieved_count + 1 WHERE id = ?1");
    update->bind(1, id);
    if (auto s = update->run(); !s) return s;
    if (db_.changes() == 0) return make_error("pair " + std::to_string(id) + " does not exist");
  }
  return transaction->commit();
}

Status MemoryStore::record_outcome(int64_t pair_id, bool improved) {
  // A pair cannot have helped more often than it was shown: an outcome implies a retrieval.
  auto update = db_.cached(
      "UPDATE pairs SET improved_count = improved_count + ?2,"
      " retrieved_count = max(retrieved_count, improved_count + ?2) WHERE id = ?1");
  update->bind(1, pair_id).bind(2, improved ? 1 : 0);
  if (auto s = update->run(); !s) return s;
  if (db_.changes() == 0) return make_error("pair " + std::to_string(pair_id) + " does not exist");
  return ok_status();
}

}  // namespace kopt::memory
