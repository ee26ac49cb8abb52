#include "exchange/import_checks.h"

#include <nlohmann/json.hpp>
#include <set>

#include "common/json_limits.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "common/verdict.h"
#include "sandbox/compiler.h"
#include "sandbox/device_code_rules.h"
#include "sandbox/kernel_file.h"
#include "sandbox/name_rules.h"

namespace kopt::memory {

namespace {

using NameRule = bool (*)(std::string_view);

// The value is quoted in the message on one line, so the message itself carries no control
// characters from the file.
void check_name(JsonReader& reader, const std::string& path, const std::string& value,
                NameRule rule, std::string_view why) {
  if (!value.empty() && !rule(value))
    reader.error(path,
                 "'" + one_line_text(clip_utf8(value, 200)) + "' is refused: " + std::string(why));
}

void check_sha(JsonReader& reader, const std::string& path, const std::string& sha) {
  check_name(reader, path, sha, is_sha256_hex, "expected 64 lower-case hexadecimal digits");
}

// Tunable names become -DNAME=VALUE for the compiler.
void check_tunables(JsonReader& reader, const std::string& path, const std::string& text) {
  auto tunables = parse_json_bounded(text);
  if (tunables.is_discarded() || !tunables.is_object()) {
    reader.error(path, "expected an object of tunable values");
    return;
  }
  for (const auto& [name, value] : tunables.items()) {
    check_name(reader, path + "." + name, name, is_identifier_name, "not an identifier");
    if (!value.is_number_integer()) reader.error(path + "." + name, "expected an integer");
  }
}

const std::string kTaskRule(kTaskNameRule);

// Names the export writes into C++ and Python (tensors, sizes, constants): a keyword there
// (`lambda`, `class`) once made kopt_torch.py and the CMake build fail after import.
void check_code_names(JsonReader& reader, const nlohmann::json& spec) {
  auto check = [&](const std::string& path, const std::string& name) {
    if (is_reserved_code_name(name))
      reader.error("$.spec_json: " + path,
                   "'" + one_line_text(name) + "' " + std::string(kReservedCodeNameRule));
  };
  for (const char* key : {"inputs", "outputs"}) {
    if (!spec.contains(key) || !spec[key].is_array()) continue;
    for (size_t i = 0; i < spec[key].size(); ++i) {
      const auto& tensor = spec[key][i];
      if (tensor.is_object() && tensor.contains("name") && tensor["name"].is_string())
        check(std::string("$.") + key + "[" + std::to_string(i) + "].name",
              tensor["name"].get<std::string>());
    }
  }
  for (const char* key : {"sizes", "constants"}) {
    if (!spec.contains(key) || !spec[key].is_object()) continue;
    for (const auto& [name, value] : spec[key].items())
      check(std::string("$.") + key + "." + name, name);
  }
}

}  // namespace

void check_imported_task(JsonReader& reader, const TaskRecord& task) {
  check_name(reader, "$.name", task.name, is_task_name, kTaskRule);
  // The spec is the task.json the kernels were measured against; its free text is escaped by
  // each writer that uses it, but its name must be the entry's.
  auto spec = parse_json_bounded(task.spec_json);
  if (spec.is_discarded() || !spec.is_object()) {
    reader.error("$.spec_json", "expected a task.json object");
  } else if (spec.contains("name") &&
             !(spec["name"].is_string() && spec["name"].get<std::string>() == task.name)) {
    reader.error("$.spec_json", "its \"name\" differs from $.name");
  } else {
    check_code_names(reader, spec);
  }
}

void check_imported_kernel(JsonReader& reader, const KernelRecord& kernel,
                           const std::string& sha256, const std::string& parent_sha256) {
  check_name(reader, "$.task", kernel.task, is_task_name, kTaskRule);
  check_sha(reader, "$.sha256", sha256);
  check_sha(reader, "$.parent_sha256", parent_sha256);
  check_tunables(reader, "$.tunables", kernel.tunables_json);
  // The source is judged as the compile gate judges a candidate: an imported kernel reaches the
  // export (a host compiler) and prompts without ever passing the gate otherwise.
  auto file = parse_kernel_file(kernel.source, "kernel.cu", nullptr);
  if (!file) {
    reader.error("$.source", one_line_text(file.error()));
    return;
  }
  std::set<std::string> tunables;
  for (const auto& t : file->tunables) tunables.insert(t.name);
  if (auto rule = check_device_code_only(kernel.source, "kernel.cu", tunables); !rule)
    reader.error("$.source", one_line_text(rule.error()));
}

Verdict imported_verdict(JsonReader& reader, const std::string& path, const std::string& name) {
  if (name.empty()) {
    reader.error(path, "the verdict is missing");
    return Verdict::kCrash;
  }
  std::optional<Verdict> verdict = parse_verdict(name);
  if (!verdict || *verdict == Verdict::kSanitizing) {
    reader.error(path, "'" + one_line_text(name) + "' is not a verdict");
    return Verdict::kCrash;
  }
  return *verdict;
}

Origin imported_origin(JsonReader& reader, const std::string& path, const std::string& name) {
  std::optional<Origin> origin = parse_origin(name);
  if (!origin) {
    reader.error(path, "'" + one_line_text(name) +
                           "' is not a kernel origin (baseline, coder, tuner or empty)");
    return Origin::kUnknown;
  }
  return *origin;
}

void check_imported_evaluation(JsonReader& reader, const EvaluationRecord& evaluation,
                               const std::string& kernel_sha256) {
  check_name(reader, "$.task", evaluation.task, is_task_name, kTaskRule);
  check_sha(reader, "$.kernel_sha256", kernel_sha256);
  check_name(reader, "$.gpu.model", evaluation.gpu.model, is_gpu_name, kGpuNameRule);
  check_tunables(reader, "$.tunables", evaluation.tunables_json);
}

void check_imported_pair(JsonReader& reader, const PairRecord& pair, const std::string& slow_sha256,
                         const std::string& fast_sha256) {
  check_name(reader, "$.task", pair.task, is_task_name, kTaskRule);
  check_sha(reader, "$.slow_sha256", slow_sha256);
  check_sha(reader, "$.fast_sha256", fast_sha256);
  check_name(reader, "$.gpu_model", pair.gpu_model, is_gpu_name, kGpuNameRule);
  if (!pair.gpu_arch.empty() && !is_valid_arch(pair.gpu_arch))
    reader.error("$.gpu_arch", "'" + one_line_text(pair.gpu_arch) + "' is not sm_XX or sm_XXa");
}

}  // namespace kopt::memory
