// Imported specs with keyword names (issue 34, cause 9): a tensor, size or constant named like a
// C++ or Python keyword (`lambda`, `class`) or a name the exported code uses made kopt_torch.py
// and the CMake build fail. They are refused where a task is loaded (task.json, naming the file
// and the JSON path) and where a shared memory's task is imported (naming the entry's path).
#include <gtest/gtest.h>

#include "common/files.h"
#include "common/json_reader.h"
#include "exchange/import_checks.h"
#include "sandbox/name_rules.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

using nlohmann::json;

json axpy_spec() {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks" / "axpy" / "task.json");
  if (!text) throw std::runtime_error(text.error());
  return json::parse(*text);
}

// The spec with `rename(spec)` applied, parsed as tasks/imported/task.json.
Result<TaskSpec> parsed_with(void (*rename)(json&)) {
  json spec = axpy_spec();
  rename(spec);
  return parse_task(spec.dump(2), "tasks/imported/task.json");
}

TEST(KeywordNames, AxpyAsShippedLoads) {
  ASSERT_TRUE(parse_task(axpy_spec().dump(2), "tasks/axpy/task.json").ok());
}

TEST(KeywordNames, TensorNamedLambdaIsRefusedWithFileAndPath) {
  auto task = parsed_with([](json& s) { s["inputs"][0]["name"] = "lambda"; });
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.error().find("tasks/imported/task.json"), std::string::npos) << task.error();
  EXPECT_NE(task.error().find("$.inputs[0].name"), std::string::npos) << task.error();
  EXPECT_NE(task.error().find("'lambda' is a keyword of C++ or Python"), std::string::npos)
      << task.error();
}

TEST(KeywordNames, OutputNamedClassIsRefused) {
  auto task = parsed_with([](json& s) { s["outputs"][0]["name"] = "class"; });
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.error().find("$.outputs[0].name"), std::string::npos) << task.error();
}

TEST(KeywordNames, SizeAndConstantNamesAreCheckedToo) {
  auto size = parsed_with([](json& s) { s["sizes"]["None"] = 4; });
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().find("$.sizes.None"), std::string::npos) << size.error();
  auto constant = parsed_with([](json& s) { s["constants"]["kopt_stream"] = 1.0; });
  ASSERT_FALSE(constant.ok());
  EXPECT_NE(constant.error().find("$.constants.kopt_stream"), std::string::npos)
      << constant.error();
}

TEST(KeywordNames, TheRuleCoversBothLanguagesAndGeneratedNames) {
  for (const char* name : {"lambda", "class", "None", "def", "yield", "template", "int64_t",
                           "size_t", "SIZE_MAX", "torch", "_call", "__x", "kopt_grid"})
    EXPECT_TRUE(is_reserved_code_name(name)) << name;
  for (const char* name : {"x", "out", "weight", "q_out", "lambda_", "classes", "n", "h"})
    EXPECT_FALSE(is_reserved_code_name(name)) << name;
}

TEST(KeywordNames, ImportedTaskIsRefusedWithItsPath) {
  json spec = axpy_spec();
  spec["inputs"][1]["name"] = "lambda";
  memory::TaskRecord task;
  task.name = spec["name"].get<std::string>();
  task.spec_json = spec.dump();
  JsonReader reader("shared.jsonl:3");
  memory::check_imported_task(reader, task);
  ASSERT_FALSE(reader.ok());
  std::string errors;
  for (const auto& e : reader.errors()) errors += e + "\n";
  EXPECT_NE(errors.find("shared.jsonl:3"), std::string::npos) << errors;
  EXPECT_NE(errors.find("$.spec_json: $.inputs[1].name"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'lambda'"), std::string::npos) << errors;
  // The same entry with an ordinary name passes.
  spec["inputs"][1]["name"] = "y";
  task.spec_json = spec.dump();
  JsonReader fine("shared.jsonl:3");
  memory::check_imported_task(fine, task);
  EXPECT_TRUE(fine.ok());
}

}  // namespace
}  // namespace kopt
