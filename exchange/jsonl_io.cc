#include "exchange/jsonl_io.h"

#include <nlohmann/json.hpp>
#include <vector>

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

// One line of a task, by name.
json task_line(const sql::Statement& row) {
  return json{{"type", "task"},
              {"name", row.column_text(0)},
              {"spec_hash", row.column_text(1)},
              {"tags", rows::tags_from_json(row.column_text(2))},
              {"spec_json", row.column_text(3)},
              {"updated_at", row.column_text(4)}};
}

json kernel_line(const sql::Statement& row) {
  KernelRecord k = rows::read_kernel(row);
  return json{{"type", "kernel"},
              {"sha256", k.sha256},
              {"task", k.task},
              {"parent_sha256", row.column_text(12)},
              {"origin", origin_json(k.origin)},
              {"tunables", embedded(k.tunables_json)},
              {"created_at", k.created_at},
              {"source", k.source}};
}

json evaluation_line(const sql::Statement& row) {
  EvaluationRecord e = rows::read_evaluation(row);
  return json{{"type", "evaluation"},
              {"kernel_sha256", row.column_text(rows::kEvaluationColumnCount)},
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

json pair_line(const sql::Statement& row) {
  PairRecord p = rows::read_pair(row);
  return json{{"type", "pair"},
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
              {"created_at", p.created_at}};
}

// One section of the file: its rows' query, each row's line, and what it counts.
struct Section {
  std::string sql;
  json (*line)(const sql::Statement& row);
  int64_t JsonlCounts::*count;
};

// In this order: tasks first, then kernels by id (a parent always has a smaller id than its
// child, so an import meets every parent before its child), their evaluations naming the kernel
// by sha256, and the pairs naming their two kernels by sha256.
std::vector<Section> sections() {
  return {
      {"SELECT name, spec_hash, tags, spec_json, updated_at FROM tasks ORDER BY name", task_line,
       &JsonlCounts::tasks},
      {std::string("SELECT ") + rows::kKernelColumns +
           ", coalesce(parent.sha256, '') FROM kernels k JOIN tasks t ON t.id = "
           "k.task_id LEFT JOIN kernels parent ON parent.id = k.parent_id ORDER BY k.id",
       kernel_line, &JsonlCounts::kernels},
      {std::string("SELECT ") + rows::kEvaluationColumns +
           ", k.sha256 FROM evaluations e JOIN tasks t ON t.id = e.task_id"
           " JOIN kernels k ON k.id = e.kernel_id ORDER BY e.id",
       evaluation_line, &JsonlCounts::evaluations},
      {std::string("SELECT ") + rows::kPairColumns +
           ", slow.sha256, fast.sha256 FROM pairs p JOIN tasks t ON t.id = "
           "p.task_id JOIN kernels slow ON slow.id = p.slow_kernel_id"
           " JOIN kernels fast ON fast.id = p.fast_kernel_id ORDER BY p.id",
       pair_line, &JsonlCounts::pairs},
  };
}

// Writes one line per row of the section's query, counting them.
Status export_section(sql::Database& db, const Section& section, std::ostream& out,
                      JsonlCounts& counts) {
  auto statement = db.prepare(section.sql);
  if (!statement) return make_error(statement.error());
  while (true) {
    auto row = statement->step();
    if (!row) return make_error("export: " + row.error());
    if (!*row) return ok_status();
    out << dump_json(section.line(*statement)) << "\n";
    ++(counts.*section.count);
  }
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
  for (const Section& section : sections()) {
    if (auto s = export_section(db, section, out, counts); !s) return make_error(s.error());
  }
  out.flush();
  if (!out) return make_error("export: write failed");
  return counts;
}

}  // namespace kopt::memory
