#include "sandbox/judging_spec.h"

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/sha256.h"

namespace kopt {

std::string judging_spec_sha256(const TaskSpec& task) {
  auto parsed = parse_json_bounded(task.raw_json);
  // Which production baselines a task is compared with never changes a verdict: declaring them
  // must not make every kernel judged before read as judged under an older spec.
  if (parsed.is_object()) {
    for (const char* key : {"production_baselines", "cublaslt"}) parsed.erase(key);
  }
  // An object's keys come out sorted and without white space, so only meaning counts.
  std::string canonical = parsed.is_discarded() ? task.raw_json : parsed.dump();
  std::string reference;
  if (!task.dir.empty()) {
    if (auto text = read_file(task.dir / "reference.cu")) reference = std::move(*text);
  }
  // Lengths first, so that no split of the same bytes between the two parts hashes alike.
  return sha256_hex("kopt-judging-spec 1\ntask.json " + std::to_string(canonical.size()) + "\n" +
                    canonical + "\nreference.cu " + std::to_string(reference.size()) + "\n" +
                    reference);
}

}  // namespace kopt
