#include "memory_store/example_draws.h"

#include <nlohmann/json.hpp>

#include "memory_store/memory_store.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

namespace {

ExampleDrawRecord read_draw(const sql::Statement& row) {
  ExampleDrawRecord d;
  sql::read_columns(row, d.id, d.run_id, d.task, d.agent, d.parent_kernel_id, d.pair_id,
                    d.propensity, d.candidates, d.slot, d.shown, d.plan_ids, d.created_at);
  return d;
}

}  // namespace

Status migrate_to_version_7(sql::Database& db) {
  // A table of its own, which older code never names: nothing stored before changes. The pair
  // is kept by id without a foreign key, so `memory prune` may drop a pair without losing the
  // record that it was once shown (an off-policy estimate needs every draw, kept or pruned).
  return db.execute(R"sql(
CREATE TABLE example_draws (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  task TEXT NOT NULL,
  agent TEXT NOT NULL,
  parent_kernel_id INTEGER,
  pair_id INTEGER NOT NULL,
  propensity REAL NOT NULL,
  candidates INTEGER NOT NULL,
  slot INTEGER NOT NULL DEFAULT 0,
  shown_pair_ids TEXT NOT NULL DEFAULT '[]',
  plan_ids TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL
);
CREATE INDEX example_draws_run ON example_draws(run_id, id);
)sql");
}

Result<int64_t> add_example_draw(sql::Database& db, const ExampleDrawRecord& draw) {
  auto statement = db.cached(
      "INSERT INTO example_draws (run_id, task, agent, parent_kernel_id, pair_id, propensity,"
      " candidates, slot, shown_pair_ids, plan_ids, created_at)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  statement->bind_all(draw.run_id, draw.task, draw.agent, draw.parent_kernel_id, draw.pair_id,
                      draw.propensity, draw.candidates, draw.slot,
                      nlohmann::json(draw.shown).dump(), nlohmann::json(draw.plan_ids).dump(),
                      draw.created_at.empty() ? utc_timestamp() : draw.created_at);
  if (auto s = statement->run(); !s) return make_error("example_draws: " + s.error());
  return db.last_insert_rowid();
}

Status set_draw_plans(sql::Database& db, int64_t draw_id, const std::vector<int64_t>& plan_ids) {
  auto statement = db.cached("UPDATE example_draws SET plan_ids = ?2 WHERE id = ?1");
  statement->bind_all(draw_id, nlohmann::json(plan_ids).dump());
  if (auto s = statement->run(); !s) return make_error("example_draws: " + s.error());
  return ok_status();
}

Result<std::vector<ExampleDrawRecord>> list_example_draws(sql::Database& db,
                                                          std::optional<int64_t> run_id) {
  auto statement = db.cached(
      "SELECT id, run_id, task, agent, parent_kernel_id, pair_id, propensity, candidates, slot,"
      " shown_pair_ids, plan_ids, created_at FROM example_draws"
      " WHERE ?1 IS NULL OR run_id = ?1 ORDER BY id");
  statement->bind(1, run_id);
  auto draws = statement->collect(read_draw);
  if (!draws) return make_error("example_draws: " + draws.error());
  return draws;
}

}  // namespace kopt::memory
