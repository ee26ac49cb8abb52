// What `kopt memory import` checks in each entry beyond its JSON shape: every name that later
// becomes a path or code passes the same rule as task.json and the compile gate
// (sandbox/name_rules.h), a kernel's source must be a kernel file the gate would compile
// (its plan parses and it holds device code only), and a task's spec must be a JSON object of
// the same name. Problems land in the reader under the entry's JSON path.
#pragma once

#include <string>

#include "common/json_reader.h"
#include "memory_store/records.h"

namespace kopt::memory {

void check_imported_task(JsonReader& reader, const TaskRecord& task);
void check_imported_kernel(JsonReader& reader, const KernelRecord& kernel,
                           const std::string& sha256, const std::string& parent_sha256);
// The verdict and the origin an import line names, parsed at the edge. A name outside their
// tables (or "sanitizing", which only the daemon writes for a kernel still under its sanitizer
// pass) is an error at `path`; the value returned then is never stored.
Verdict imported_verdict(JsonReader& reader, const std::string& path, const std::string& name);
Origin imported_origin(JsonReader& reader, const std::string& path, const std::string& name);

void check_imported_evaluation(JsonReader& reader, const EvaluationRecord& evaluation,
                               const std::string& kernel_sha256);
void check_imported_pair(JsonReader& reader, const PairRecord& pair, const std::string& slow_sha256,
                         const std::string& fast_sha256);

}  // namespace kopt::memory
