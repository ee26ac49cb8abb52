// `kopt memory import --jsonl`: reads what export_jsonl wrote, strictly (unknown keys are errors
// with a "did you mean"), and de-duplicates against the memory: tasks by name, kernels by content
// hash, evaluations by their measured values, pairs by kernels and GPU (merged by add_pair).
// Two passes: every line is parsed and checked (the kernel's plan and device-code gate, its
// digest) with no lock held, then the checked entries are written in one transaction, so a
// large or hostile file never holds the database's write lock for longer than its inserts.
#include <functional>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/json_reader.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "exchange/import_checks.h"
#include "exchange/jsonl_io.h"
#include "sandbox/kernel_file.h"

namespace kopt::memory {

using nlohmann::json;

namespace {

// The most bytes an imported field may hold: a kernel source as the gate allows, a task spec or
// an evaluation's detail as the daemon writes them, every other field (a name, a lesson, a
// date) as a line of text. A field over its cap is an error naming its path, not a row that
// makes every later prompt, export or listing slow.
constexpr size_t kMaxFieldBytes = 4096;
constexpr size_t kMaxDetailBytes = 64 * 1024;
constexpr size_t kMaxBlobBytes = 64 * 1024;
constexpr size_t kMaxSpecBytes = 256 * 1024;

// Reads one line's fields; every problem lands in `reader`.
class LineReader {
 public:
  LineReader(JsonReader& reader, const json& object) : reader_(reader), object_(object) {}

  std::string text(const char* key, bool required = false, size_t max_bytes = kMaxFieldBytes) {
    std::string value = reader_.string_field(object_, "$", key, required).value_or("");
    return capped(key, std::move(value), max_bytes);
  }
  double number(const char* key, bool required = false) {
    return reader_.number_field(object_, "$", key, required).value_or(0);
  }
  int64_t integer(const char* key) {
    return reader_.integer_field(object_, "$", key, false).value_or(0);
  }
  // An embedded JSON value (tunables, resources) back as text; "{}" when absent.
  std::string blob(const char* key) {
    if (!object_.contains(key)) return "{}";
    const json& value = object_.at(key);
    return capped(key, value.is_string() ? value.get<std::string>() : dump_json(value),
                  kMaxBlobBytes);
  }
  std::vector<std::string> tags() {
    auto tags = reader_.string_list(object_, "$", "tags", false);
    if (tags.size() > 256) reader_.error("$.tags", "more than 256 tags");
    for (auto& tag : tags) tag = capped("tags", std::move(tag), 200);
    return tags;
  }
  const json* object(const char* key) {
    return reader_.typed_field(object_, "$", key, json::value_t::object, false);
  }

 private:
  std::string capped(const char* key, std::string value, size_t max_bytes) {
    if (value.size() <= max_bytes) return value;
    reader_.error(
        std::string("$.") + key,
        std::to_string(value.size()) + " bytes, over the limit of " + std::to_string(max_bytes));
    return "";
  }

  JsonReader& reader_;
  const json& object_;
};

// What a checked line does to the memory, run later inside the write transaction.
using Write = std::function<Status()>;

class Importer {
 public:
  Importer(MemoryStore& store, std::string origin) : store_(store), origin_(std::move(origin)) {}

  // Parses and checks one line (no database write); its write, or nothing for the header.
  Result<Write> line(const std::string& text, int number);
  const ImportReport& report() const { return report_; }
  bool saw_header() const { return saw_header_; }

 private:
  Result<Write> task(JsonReader& reader, const json& object);
  Result<Write> kernel(JsonReader& reader, const json& object);
  Result<Write> evaluation(JsonReader& reader, const json& object);
  Result<Write> pair(JsonReader& reader, const json& object);
  // The id of the kernel `sha` names; an error naming the line (`where`) and `key` when it is
  // neither in the memory nor written earlier in this import.
  Result<int64_t> kernel_id(const std::string& where, const std::string& sha, const char* key);
  Status write_evaluation(const std::string& where, const std::string& sha, EvaluationRecord& e);
  // Counts a line the memory stored as `id` under `count` (as already present when `present`:
  // a merged pair), or says where it failed.
  Status stored(const std::string& where, const Result<int64_t>& id, int64_t JsonlCounts::*count,
                bool present = false);
  Status write_pair(const std::string& where, const std::string& slow, const std::string& fast,
                    PairRecord& p);

  MemoryStore& store_;
  std::string origin_;
  bool saw_header_ = false;
  ImportReport report_;
};

Error fail(const JsonReader& reader) { return make_error(reader.message()); }

Result<Write> Importer::line(const std::string& text, int number) {
  JsonReader parser(origin_);
  auto object = parser.parse(text, number);
  if (!object) return fail(parser);
  JsonReader reader(origin_ + ":" + std::to_string(number));
  if (!object->is_object()) {
    reader.error("$", "expected an object");
    return fail(reader);
  }
  auto type = reader.string_field(*object, "$", "type", true);
  if (!type) return fail(reader);
  if (!saw_header_) {
    if (*type != "header") {
      reader.error("$.type", "the first line must be the header ({\"type\":\"header\",...})");
      return fail(reader);
    }
    reader.check_keys(*object, "$", {"type", "format", "kind"});
    auto format = reader.integer_field(*object, "$", "format", true);
    if (format && *format > kJsonlFormatVersion) {
      reader.error("$.format", "format " + std::to_string(*format) +
                                   " is newer than this kopt reads (" +
                                   std::to_string(kJsonlFormatVersion) + "); upgrade kopt");
    }
    if (reader.string_field(*object, "$", "kind", true).value_or("") != "kopt-memory") {
      reader.error("$.kind", "not a kopt memory export");
    }
    saw_header_ = true;
    if (!reader.ok()) return fail(reader);
    return Write([] { return ok_status(); });
  }
  if (*type == "task") return task(reader, *object);
  if (*type == "kernel") return kernel(reader, *object);
  if (*type == "evaluation") return evaluation(reader, *object);
  if (*type == "pair") return pair(reader, *object);
  reader.error("$.type", "unknown type '" + *type + "'" +
                             did_you_mean(*type, {"task", "kernel", "evaluation", "pair"}));
  return fail(reader);
}

Result<Write> Importer::task(JsonReader& reader, const json& object) {
  reader.check_keys(object, "$", {"type", "name", "spec_hash", "tags", "spec_json", "updated_at"});
  LineReader in(reader, object);
  TaskRecord task;
  task.name = in.text("name", true);
  task.spec_hash = in.text("spec_hash", true);
  task.tags = in.tags();
  task.spec_json = in.text("spec_json", true, kMaxSpecBytes);
  task.updated_at = in.text("updated_at");
  check_imported_task(reader, task);
  if (!reader.ok()) return fail(reader);
  return Write([this, task = std::move(task)]() -> Status {
    auto existing = store_.find_task(task.name);
    if (!existing) return make_error(existing.error());
    // The memory's own spec of a task wins: it is the one its kernels were measured against.
    if (*existing) {
      ++report_.present.tasks;
      return ok_status();
    }
    if (auto id = store_.upsert_task(task); !id) return make_error(id.error());
    ++report_.added.tasks;
    return ok_status();
  });
}

Result<int64_t> Importer::kernel_id(const std::string& where, const std::string& sha,
                                    const char* key) {
  auto id = store_.find_kernel(sha);
  if (!id) return make_error(id.error());
  if (!*id) {
    JsonReader reader(where);
    reader.error(std::string("$.") + key, "kernel " + sha.substr(0, 12) +
                                              " is neither in the memory nor earlier in the file");
    return make_error(reader.message());
  }
  return **id;
}

Result<Write> Importer::kernel(JsonReader& reader, const json& object) {
  reader.check_keys(
      object, "$",
      {"type", "sha256", "task", "parent_sha256", "origin", "tunables", "created_at", "source"});
  LineReader in(reader, object);
  KernelRecord kernel;
  std::string sha = in.text("sha256", true);
  kernel.source = in.text("source", true, kMaxKernelSourceBytes);
  kernel.task = in.text("task", true);
  std::string parent = in.text("parent_sha256");
  kernel.tunables_json = in.blob("tunables");
  kernel.created_at = in.text("created_at");
  if (const json* origin = in.object("origin")) {
    reader.check_keys(*origin, "$.origin", {"agent", "model", "prompt_template", "tuner"});
    kernel.origin.agent =
        imported_origin(reader, "$.origin.agent",
                        reader.string_field(*origin, "$.origin", "agent", false).value_or(""));
    kernel.origin.model = reader.string_field(*origin, "$.origin", "model", false).value_or("");
    kernel.origin.prompt_template =
        reader.string_field(*origin, "$.origin", "prompt_template", false).value_or("");
    kernel.origin.tuner = reader.bool_field(*origin, "$.origin", "tuner", false).value_or(false);
  }
  check_imported_kernel(reader, kernel, sha, parent);
  if (reader.ok() && sha256_hex(kernel.source) != sha) {
    reader.error("$.sha256", "does not match the SHA-256 of the source (the file is damaged)");
  }
  if (!reader.ok()) return fail(reader);
  return Write([this, where = reader.origin(), sha = std::move(sha), parent = std::move(parent),
                kernel = std::move(kernel)]() mutable -> Status {
    if (auto existing = store_.find_kernel(sha); !existing || *existing) {
      if (!existing) return make_error(existing.error());
      ++report_.present.kernels;
      return ok_status();
    }
    if (!parent.empty()) {
      auto parent_id = kernel_id(where, parent, "parent_sha256");
      if (!parent_id) return make_error(parent_id.error());
      kernel.parent_id = *parent_id;
    }
    return stored(where, store_.add_kernel(kernel), &JsonlCounts::kernels);
  });
}

Result<Write> Importer::evaluation(JsonReader& reader, const json& object) {
  reader.check_keys(
      object, "$",
      {"type", "kernel_sha256", "task", "gpu", "verdict", "detail", "tunables", "median_us",
       "noise", "baseline_us", "speedup", "sol_percent", "resources", "profile", "created_at"});
  LineReader in(reader, object);
  EvaluationRecord e;
  std::string sha = in.text("kernel_sha256", true);
  e.task = in.text("task", true);
  e.verdict = imported_verdict(reader, "$.verdict", in.text("verdict", true));
  e.detail = in.text("detail", false, kMaxDetailBytes);
  e.tunables_json = in.blob("tunables");
  e.median_us = in.number("median_us");
  e.noise = in.number("noise");
  e.baseline_us = in.number("baseline_us");
  e.speedup = in.number("speedup");
  e.sol_percent = in.number("sol_percent");
  e.resources_json = in.blob("resources");
  e.profile_json = in.blob("profile");  // absent before format 2
  e.created_at = in.text("created_at", true);
  if (const json* gpu = reader.typed_field(object, "$", "gpu", json::value_t::object, true)) {
    reader.check_keys(*gpu, "$.gpu",
                      {"model", "compute_capability", "driver_version", "cuda_version"});
    e.gpu.model = reader.string_field(*gpu, "$.gpu", "model", true).value_or("");
    e.gpu.compute_capability =
        reader.string_field(*gpu, "$.gpu", "compute_capability", false).value_or("");
    e.gpu.driver_version = reader.string_field(*gpu, "$.gpu", "driver_version", false).value_or("");
    e.gpu.cuda_version = reader.string_field(*gpu, "$.gpu", "cuda_version", false).value_or("");
  }
  check_imported_evaluation(reader, e, sha);
  if (!reader.ok()) return fail(reader);
  return Write([this, where = reader.origin(), sha = std::move(sha),
                e = std::move(e)]() mutable -> Status { return write_evaluation(where, sha, e); });
}

Status Importer::write_evaluation(const std::string& where, const std::string& sha,
                                  EvaluationRecord& e) {
  auto kid = kernel_id(where, sha, "kernel_sha256");
  if (!kid) return make_error(kid.error());
  e.kernel_id = *kid;
  auto duplicate = store_.database().cached(
      "SELECT 1 FROM evaluations WHERE kernel_id = ?1 AND gpu_model = ?2 AND created_at = ?3"
      " AND verdict = ?4 AND median_us = ?5");
  duplicate->bind(1, e.kernel_id)
      .bind(2, e.gpu.model)
      .bind(3, e.created_at)
      .bind(4, verdict_name(e.verdict))
      .bind(5, e.median_us);
  auto found = duplicate->step();
  if (!found) return make_error(found.error());
  if (*found) {
    ++report_.present.evaluations;
    return ok_status();
  }
  return stored(where, store_.add_evaluation(e), &JsonlCounts::evaluations);
}

Result<Write> Importer::pair(JsonReader& reader, const json& object) {
  reader.check_keys(
      object, "$",
      {"type", "slow_sha256", "fast_sha256", "task", "speedup", "gpu_model", "gpu_arch", "summary",
       "tags", "retrieved_count", "improved_count", "created_at"});
  LineReader in(reader, object);
  PairRecord p;
  std::string slow = in.text("slow_sha256", true);
  std::string fast = in.text("fast_sha256", true);
  p.task = in.text("task", true);
  p.speedup = in.number("speedup", true);
  p.gpu_model = in.text("gpu_model", true);
  p.gpu_arch = in.text("gpu_arch");
  p.summary = in.text("summary");
  p.tags = in.tags();
  p.retrieved_count = in.integer("retrieved_count");
  p.improved_count = in.integer("improved_count");
  p.created_at = in.text("created_at");
  check_imported_pair(reader, p, slow, fast);
  if (!reader.ok()) return fail(reader);
  return Write([this, where = reader.origin(), slow = std::move(slow), fast = std::move(fast),
                p = std::move(p)]() mutable -> Status { return write_pair(where, slow, fast, p); });
}

Status Importer::stored(const std::string& where, const Result<int64_t>& id,
                        int64_t JsonlCounts::*count, bool present) {
  if (!id) return make_error(where + ": " + id.error());
  // Through a reference: GCC 12 increments a temporary copy in `++((c ? a : b).*m)`.
  JsonlCounts& counts = present ? report_.present : report_.added;
  ++(counts.*count);
  return ok_status();
}

Status Importer::write_pair(const std::string& where, const std::string& slow,
                            const std::string& fast, PairRecord& p) {
  auto slow_id = kernel_id(where, slow, "slow_sha256");
  if (!slow_id) return make_error(slow_id.error());
  auto fast_id = kernel_id(where, fast, "fast_sha256");
  if (!fast_id) return make_error(fast_id.error());
  p.slow_kernel_id = *slow_id;
  p.fast_kernel_id = *fast_id;
  auto existing = store_.database().cached(
      "SELECT 1 FROM pairs WHERE slow_kernel_id = ?1 AND fast_kernel_id = ?2 AND gpu_model = ?3");
  existing->bind(1, p.slow_kernel_id).bind(2, p.fast_kernel_id).bind(3, p.gpu_model);
  auto found = existing->step();
  if (!found) return make_error(found.error());
  return stored(where, store_.add_pair(p), &JsonlCounts::pairs, *found);
}

}  // namespace

Result<ImportReport> import_jsonl(MemoryStore& store, const std::string& text,
                                  const std::string& origin) {
  Importer importer(store, origin);
  std::vector<Write> writes;
  size_t start = 0;
  int number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto write = importer.line(line, number);
    if (!write) return make_error(write.error());
    writes.push_back(std::move(*write));
  }
  if (!importer.saw_header()) return make_error(origin + ": empty file, not a kopt memory export");
  // Only look-ups and inserts from here on: the lock is held for them alone.
  auto transaction = store.begin();
  if (!transaction) return make_error(transaction.error());
  for (auto& write : writes)
    if (auto s = write(); !s) return make_error(s.error());
  if (auto s = transaction->commit(); !s) return make_error(s.error());
  return importer.report();
}

}  // namespace kopt::memory
