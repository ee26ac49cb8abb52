// One task's files in an export, and the files the whole folder shares.
#include "common/files.h"
#include "common/sha256.h"
#include "memory_store/export_api_codegen.h"
#include "memory_store/export_bundle.h"
#include "memory_store/export_selftest_codegen.h"
#include "memory_store/launcher_codegen.h"

namespace kopt::exporter {

std::optional<std::string> find_reference_source(const std::filesystem::path& tasks_root,
                                                 const std::string& task,
                                                 const std::string& spec_hash) {
  if (tasks_root.empty()) return std::nullopt;
  auto spec = read_file(tasks_root / task / "task.json");
  if (!spec || sha256_hex(*spec) != spec_hash) return std::nullopt;
  auto source = read_file(tasks_root / task / "reference.cu");
  if (!source) return std::nullopt;
  return *source;
}

Result<std::vector<BundleFile>> generate_task_files(const TaskFilesInput& input,
                                                    BundleTask& bundle) {
  const TaskSpec& task = *input.task;
  const std::string& name = task.name;
  std::vector<BundleFile> files;
  HeaderInput header;
  header.task = &task;
  header.kernel = input.kernel;
  header.tunables = input.tunables;
  header.kernel_file_name = name + ".cu";
  header.provenance = input.provenance;
  auto launcher = generate_launcher_header(header);
  if (!launcher) return make_error(launcher.error());
  files.push_back({name + ".cu", input.kernel_source});
  files.push_back({name + ".cuh", *launcher});
  const std::string kernel_namespace = "kopt_" + cpp_identifier(name);
  files.push_back({name + "_api.h", generate_api_header(task, input.reference_source.has_value())});
  files.push_back(
      {name + "_api.cu", generate_api_source(task, false, name + ".cuh", kernel_namespace)});

  bundle.spec = task;
  bundle.compile_options = input.kernel->compile_options;
  bundle.has_reference = false;
  if (!input.reference_source) return files;

  auto reference = parse_kernel_file(*input.reference_source, name + ".reference.cu", &task);
  if (!reference) return make_error("the task's reference.cu: " + reference.error());
  HeaderInput ref_header;
  ref_header.task = &task;
  ref_header.kernel = &*reference;
  ref_header.kernel_file_name = name + ".reference.cu";
  ref_header.provenance = "The task's reference kernel (the trusted oracle), for the self-test.";
  ref_header.namespace_name = kernel_namespace + "_reference";
  ref_header.kernel_prefix = "kopt_reference_";
  auto ref_launcher = generate_launcher_header(ref_header);
  if (!ref_launcher) return make_error("the task's reference.cu: " + ref_launcher.error());
  auto selftest = generate_selftest_source(task);
  if (!selftest) return make_error("self-test: " + selftest.error());
  files.push_back({name + ".reference.cu", *input.reference_source});
  files.push_back({name + ".reference.cuh", *ref_launcher});
  files.push_back(
      {name + "_reference_api.cu",
       generate_api_source(task, true, name + ".reference.cuh", ref_header.namespace_name)});
  files.push_back({name + "_selftest.cu", *selftest});
  bundle.has_reference = true;
  bundle.reference_compile_options = reference->compile_options;
  return files;
}

Result<std::vector<BundleFile>> generate_shared_files(const std::vector<BundleTask>& tasks) {
  std::vector<BundleFile> files;
  files.push_back({"CMakeLists.txt", generate_cmake_lists(tasks)});
  files.push_back({"kopt_selftest.h", selftest_support_header()});
  auto torch = generate_torch_files(tasks);
  if (!torch) return make_error(torch.error());
  files.insert(files.end(), torch->begin(), torch->end());
  return files;
}

}  // namespace kopt::exporter
