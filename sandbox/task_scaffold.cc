#include "sandbox/task_scaffold.h"

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "sandbox/name_rules.h"
#include "sandbox/task_spec.h"

namespace kopt {

namespace {

// A copy of `like`'s files, renamed to `name`, the kernels headed by what to edit.
Result<std::vector<std::pair<std::string, std::string>>> copy_of(const std::filesystem::path& like,
                                                                 const std::string& name) {
  auto spec = load_task(like);
  if (!spec) return make_error("--like: " + spec.error());
  auto task = nlohmann::ordered_json::parse(spec->raw_json);
  task["name"] = name;
  task["description"] = "TODO: say what " + name +
                        " computes, its layouts and semantics (copied from " + spec->name + ": " +
                        spec->description + ")";
  task["priority"] = task.value("priority", 1.0);
  std::vector<std::pair<std::string, std::string>> files = {{"task.json", task.dump(2) + "\n"}};
  for (const char* kernel : {"reference.cu", "baseline.cu"}) {
    auto text = read_file(like / kernel);
    if (!text) return make_error(text.error());
    std::string note = std::string("// TODO (") + name + "): copied from " + spec->name + "/" +
                       kernel +
                       (std::string(kernel) == "reference.cu"
                            ? "; make it the plainest correct oracle of the new operation, "
                              "accumulating in double.\n"
                            : "; make it the plain, correct kernel a competent engineer writes "
                              "first.\n");
    files.push_back({kernel, note + *text});
  }
  return files;
}

}  // namespace

Result<std::filesystem::path> write_new_task(const std::filesystem::path& root,
                                             const std::string& name, const std::string& kind,
                                             const std::filesystem::path& like) {
  if (!is_task_name(name))
    return make_error("task name '" + name + "': " + std::string(kTaskNameRule));
  if (kind.empty() == like.empty())
    return make_error("give one of --like TASK or --kind " + join(task_template_kinds(), "|"));
  std::filesystem::path dir = root / name;
  if (std::filesystem::exists(dir))
    return make_error(dir.string() + " exists: kopt tasks new never overwrites a task");
  auto files = kind.empty() ? copy_of(like, name) : task_template(kind, name);
  if (!files) return make_error(files.error());
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return make_error(dir.string() + ": " + error.message());
  for (const auto& [file, text] : *files)
    if (auto s = write_file_atomic(dir / file, text); !s) return make_error(s.error());
  return dir;
}

}  // namespace kopt
