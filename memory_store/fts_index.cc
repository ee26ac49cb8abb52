#include "memory_store/fts_index.h"

#include "common/strings.h"
#include "memory_store/row_readers.h"
#include "memory_store/source_identifiers.h"

namespace kopt::memory {

namespace {

// Steps `row` onto the indexed item's row; "<what> does not exist" when there is none.
Status step_to_item(sql::Statement& row, const std::string& what) {
  auto found = row.step();
  if (!found) return make_error(found.error());
  if (!*found) return make_error(what + " does not exist");
  return ok_status();
}

}  // namespace

Status index_pair(sql::Database& db, int64_t pair_id) {
  auto row = db.cached(
      "SELECT p.summary, p.tags, t.name, slow.source, fast.source FROM pairs p"
      " JOIN tasks t ON t.id = p.task_id"
      " JOIN kernels slow ON slow.id = p.slow_kernel_id"
      " JOIN kernels fast ON fast.id = p.fast_kernel_id WHERE p.id = ?1");
  if (auto s = step_to_item(row->bind(1, pair_id), "pair " + std::to_string(pair_id)); !s) return s;
  auto insert = db.cached(
      "INSERT OR REPLACE INTO pair_fts(rowid, summary, tags, task, slow_terms, fast_terms)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  insert->bind_all(pair_id, row->column_text(0),
                   join(rows::tags_from_json(row->column_text(1)), " "), row->column_text(2),
                   join(index_terms(row->column_text(3)), " "),
                   join(index_terms(row->column_text(4)), " "));
  return insert->run();
}

Status index_kernel(sql::Database& db, int64_t kernel_id) {
  auto row = db.cached(
      "SELECT k.source, t.name FROM kernels k JOIN tasks t ON t.id = k.task_id WHERE k.id = ?1");
  if (auto s = step_to_item(row->bind(1, kernel_id), "kernel " + std::to_string(kernel_id)); !s)
    return s;
  auto insert =
      db.cached("INSERT OR REPLACE INTO kernel_fts(rowid, terms, task) VALUES (?1, ?2, ?3)");
  insert->bind_all(kernel_id, join(index_terms(row->column_text(0)), " "), row->column_text(1));
  return insert->run();
}

Result<int64_t> index_and_commit(sql::Database& db, sql::Transaction& transaction, int64_t id,
                                 Status (*index)(sql::Database& db, int64_t id)) {
  if (auto s = index(db, id); !s) return make_error(s.error());
  if (auto s = transaction.commit(); !s) return make_error(s.error());
  return id;
}

}  // namespace kopt::memory
