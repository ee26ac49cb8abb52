#include "exchange/jsonl_io.h"

#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/scrub_secrets.h"
#include "memory_store/record_json.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

using nlohmann::json;

namespace {

// JSON text stored in a column, embedded as a value (an unparseable blob stays a string).
json embedded(const std::string& text) {
  auto value = parse_json_bounded(text);
  return value.is_discarded() ? json(text) : value;
}

// Runs `sql` and hands each row to `emit`.
template <typename Emit>
Status for_each_row(sql::Database& db, const std::string& sql, Emit emit) {
  auto statement = db.prepare(sql);
  if (!statement) return make_error(statement.error());
  while (true) {
    auto row = statement->step();
    if (!row) return make_error("export: " + row.error());
    if (!*row) return ok_status();
    emit(*statement);
  }
}

// One line per task, by name.
Status export_tasks(sql::Database& db, std::ostream& out, JsonlCounts& counts) {
  return for_each_row(
      db, "SELECT name, spec_hash, tags, spec_json, updated_at FROM tasks ORDER BY name",
      [&](const sql::Statement& row) {
        out << dump_json(json{{"type", "task"},
                              {"name", row.column_text(0)},
                              {"spec_hash", row.column_text(1)},
                              {"tags", rows::tags_from_json(row.column_text(2))},
                              {"spec_json", row.column_text(3)},
                              {"updated_at", row.column_text(4)}})
            << "\n";
        ++counts.tasks;
      });
}

// One line per kernel, by id: parents always have smaller ids than their children (a parent is
// stored first), so an import meets every parent before its child.
Status export_kernels(sql::Database& db, std::ostream& out, JsonlCounts& counts) {
  return for_each_row(
      db,
      std::string("SELECT ") + rows::kKernelColumns +
          ", coalesce(parent.sha256, '') FROM kernels k JOIN tasks t ON t.id = "
          "k.task_id LEFT JOIN kernels parent ON parent.id = k.parent_id ORDER BY k.id",
      [&](const sql::Statement& row) {
        KernelRecord k = rows::read_kernel(row);
        out << dump_json(json{{"type", "kernel"},
                              {"sha256", k.sha256},
                              {"task", k.task},
                              {"parent_sha256", row.column_text(12)},
                              {"origin", origin_json(k.origin)},
                              {"tunables", embedded(k.tunables_json)},
                              {"created_at", k.created_at},
                              {"source", k.source}})
            << "\n";
        ++counts.kernels;
      });
}

json evaluation_line(const EvaluationRecord& e, const std::string& kernel_sha256) {
  return json{{"type", "evaluation"},
              {"kernel_sha256", kernel_sha256},
              {"task", e.task},
              {"gpu", gpu_json(e.gpu)},
              {"verdict", verdict_name(e.verdict)},
              {"detail", scrub_secrets(e.detail)},
              {"tunables", embedded(e.tunables_json)},
              {"median_us", e.median_us},
              {"noise", e.noise},
              {"baseline_us", e.baseline_us},
              {"speedup", e.speedup},
              {"sol_percent", e.sol_percent},
              {"resources", embedded(e.resources_json)},
              {"profile", embedded(e.profile_json)},
              {"created_at", e.created_at}};
}

// One line per evaluation, by id, naming its kernel by sha256.
Status export_evaluations(sql::Database& db, std::ostream& out, JsonlCounts& counts) {
  return for_each_row(
      db,
      std::string("SELECT ") + rows::kEvaluationColumns +
          ", k.sha256 FROM evaluations e JOIN tasks t ON t.id = e.task_id"
          " JOIN kernels k ON k.id = e.kernel_id ORDER BY e.id",
      [&](const sql::Statement& row) {
        out << dump_json(evaluation_line(rows::read_evaluation(row),
                                         row.column_text(rows::kEvaluationColumnCount)))
            << "\n";
        ++counts.evaluations;
      });
}

// One line per pair, by id, naming its two kernels by sha256.
Status export_pairs(sql::Database& db, std::ostream& out, JsonlCounts& counts) {
  return for_each_row(
      db,
      std::string("SELECT ") + rows::kPairColumns +
          ", slow.sha256, fast.sha256 FROM pairs p JOIN tasks t ON t.id = "
          "p.task_id JOIN kernels slow ON slow.id = p.slow_kernel_id"
          " JOIN kernels fast ON fast.id = p.fast_kernel_id ORDER BY p.id",
      [&](const sql::Statement& row) {
        PairRecord p = rows::read_pair(row);
        out << dump_json(json{{"type", "pair"},
                              {"slow_sha256", row.column_text(rows::kPairColumnCount)},
                              {"fast_sha256", row.column_text(rows::kPairColumnCount + 1)},
                              {"task", p.task},
                              {"speedup", p.speedup},
                              {"gpu_model", p.gpu_model},
                              {"gpu_arch", p.gpu_arch},
                              {"summary", scrub_secrets(p.summary)},
                              {"tags", p.tags},
                              {"retrieved_count", p.retrieved_count},
                              {"improved_count", p.improved_count},
                              {"created_at", p.created_at}})
            << "\n";
        ++counts.pairs;
      });
}

}  // namespace

Result<JsonlCounts> export_jsonl(MemoryStore& store, std::ostream& out) {
  sql::Database& db = store.database();
  // One read transaction: the file is a snapshot even while the daemon writes.
  if (auto s = db.execute("BEGIN"); !s) return make_error(s.error());
  struct EndRead {
    sql::Database& db;
    ~EndRead() { (void)db.execute("COMMIT"); }
  } end_read{db};

  JsonlCounts counts;
  out << dump_json(
             json{{"type", "header"}, {"format", kJsonlFormatVersion}, {"kind", "kopt-memory"}})
      << "\n";
  for (auto section : {export_tasks, export_kernels, export_evaluations, export_pairs}) {
    if (auto s = section(db, out, counts); !s) return make_error(s.error());
  }
  out.flush();
  if (!out) return make_error("export: write failed");
  return counts;
}

}  // namespace kopt::memory
