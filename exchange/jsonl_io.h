// Sharing a memory between machines and teams: `kopt memory export --jsonl` and `import`.
//
// Format 2, one JSON object per line, each with a "type" (format 1 files, whose evaluations
// have no "profile", still import):
//   {"type":"header","format":2,"kind":"kopt-memory"}
//   {"type":"task", "name", "spec_hash", "tags", "spec_json", "updated_at"}
//   {"type":"kernel", "sha256", "task", "parent_sha256", "origin", "tunables", "source", ...}
//   {"type":"evaluation", "kernel_sha256", "task", "gpu", "verdict", "median_us", ..., "profile"}
//   {"type":"pair", "slow_sha256", "fast_sha256", "task", "speedup", "summary", "tags", ...}
// Kernels are referred to by content hash, tasks by name, so ids never cross machines. Runs and
// LLM calls are local accounting and are not exported.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "common/result.h"
#include "memory_store/memory_store.h"

namespace kopt::memory {

inline constexpr int kJsonlFormatVersion = 2;  // 2: evaluations carry "profile"

struct JsonlCounts {
  int64_t tasks = 0, kernels = 0, evaluations = 0, pairs = 0;
};

struct ImportReport {
  JsonlCounts added;    // new to this memory
  JsonlCounts present;  // already here (duplicates merged, nothing lost)
};

// Writes every task, kernel (parents before children), evaluation and pair as JSON lines.
Result<JsonlCounts> export_jsonl(MemoryStore& store, std::ostream& out);

// Reads JSON lines written by export_jsonl, de-duplicating against what the memory holds; all or
// nothing: one bad line (named as origin:line with its JSON path) stores nothing.
Result<ImportReport> import_jsonl(MemoryStore& store, const std::string& text,
                                  const std::string& origin);

}  // namespace kopt::memory
