// One task's files in an export, and the files the whole folder shares.
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/sha256.h"
#include "exchange/export_api_codegen.h"
#include "exchange/export_bundle.h"
#include "exchange/export_selftest_codegen.h"
#include "exchange/launcher_codegen.h"

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

namespace {

// The device code of one kernel file: its NVRTC image as TASK_image.cc (C++ data), TASK.cubin
// and TASK.ptx (for Python), and what the manifest records of it.
struct ImageFiles {
  DeviceImage image;
  std::vector<BundleFile> files;
  nlohmann::json manifest;
};

Result<ImageFiles> image_files(const KernelFile& file,
                               const std::map<std::string, int64_t>& tunables,
                               const std::string& compute_capability, const std::string& stem,
                               const std::string& prefix, const std::string& source_name,
                               const std::string& verified_sha256 = "") {
  auto image = compile_device_image(file, tunables, compute_capability);
  if (!image) return make_error(source_name + ": " + image.error());
  // What ships is what was judged: a CUBIN with other bytes (another NVRTC, another gate) is
  // another kernel, whatever its source says.
  if (!verified_sha256.empty() && sha256_hex(image->cubin) != verified_sha256)
    return make_error(source_name + ": the device image compiled now (sha256 " +
                      sha256_hex(image->cubin) + ", NVRTC " + image->nvrtc_version +
                      ") is not the one that was verified (sha256 " + verified_sha256 +
                      "); export with the kopt that verified it, or verify it again");
  ImageFiles out;
  out.files.push_back({stem + "_image.cc", generate_image_source(prefix, *image, source_name)});
  const std::string cubin_name = stem + ".cubin";
  out.files.push_back({cubin_name, image->cubin});
  out.manifest = {{"source", source_name},
                  {"image_source", stem + "_image.cc"},
                  {"arch", image->arch},
                  {"cubin", cubin_name},
                  {"cubin_sha256", sha256_hex(image->cubin)},
                  {"ptx", nullptr},
                  {"ptx_target", nullptr},
                  {"ptx_sha256", nullptr},
                  {"symbols", image->symbols},
                  {"nvrtc_version", image->nvrtc_version},
                  {"nvrtc_options", image->nvrtc_options}};
  if (!image->ptx.empty()) {
    out.files.push_back({stem + ".ptx", image->ptx});
    out.manifest["ptx"] = stem + ".ptx";
    out.manifest["ptx_target"] = image->ptx_target;
    out.manifest["ptx_sha256"] = sha256_hex(image->ptx);
  }
  out.image = std::move(*image);
  return out;
}

}  // namespace

Result<std::vector<BundleFile>> generate_task_files(const TaskFilesInput& input,
                                                    BundleTask& bundle) {
  const TaskSpec& task = *input.task;
  const std::string& name = task.name;
  const std::string kernel_namespace = "kopt_" + cpp_identifier(name);
  std::vector<BundleFile> files;
  auto kernel_image = image_files(*input.kernel, input.tunables, input.compute_capability, name,
                                  kernel_namespace, name + ".cu", input.verified_cubin_sha256);
  if (!kernel_image) return make_error(kernel_image.error());
  HeaderInput header;
  header.task = &task;
  header.kernel = input.kernel;
  header.tunables = input.tunables;
  header.kernel_file_name = name + ".cu";
  header.provenance = input.provenance;
  header.image = &kernel_image->image;
  header.image_prefix = kernel_namespace;
  auto launcher = generate_launcher_header(header);
  if (!launcher) return make_error(launcher.error());
  files.push_back({name + ".cu", input.kernel_source});
  files.push_back({name + ".cuh", *launcher});
  files.insert(files.end(), kernel_image->files.begin(), kernel_image->files.end());
  files.push_back({name + "_api.h", generate_api_header(task, input.reference_source.has_value())});
  files.push_back(
      {name + "_api.cc", generate_api_source(task, false, name + ".cuh", kernel_namespace)});

  bundle.spec = task;
  bundle.has_reference = false;
  bundle.image = kernel_image->manifest;
  bundle.reference_image = nullptr;
  if (!input.reference_source) {
    auto plan = generate_python_plan(task, *input.kernel, kernel_image->image, input.tunables,
                                     nullptr, nullptr);
    if (!plan) return make_error(plan.error());
    files.push_back({"kopt_plan_" + name + ".py", *plan});
    return files;
  }

  auto reference = parse_kernel_file(*input.reference_source, name + ".reference.cu", &task);
  if (!reference) return make_error("the task's reference.cu: " + reference.error());
  const std::string reference_namespace = kernel_namespace + "_reference";
  auto reference_image = image_files(*reference, {}, input.compute_capability, name + ".reference",
                                     reference_namespace, name + ".reference.cu");
  if (!reference_image) return make_error("the task's reference.cu: " + reference_image.error());
  // TASK.reference_image.cc reads oddly: the reference's files share the TASK_reference_ stem.
  reference_image->files[0].name = name + "_reference_image.cc";
  reference_image->manifest["image_source"] = name + "_reference_image.cc";
  HeaderInput ref_header;
  ref_header.task = &task;
  ref_header.kernel = &*reference;
  ref_header.kernel_file_name = name + ".reference.cu";
  ref_header.provenance = "The task's reference kernel (the trusted oracle), for the self-test.";
  ref_header.namespace_name = reference_namespace;
  ref_header.image = &reference_image->image;
  ref_header.image_prefix = reference_namespace;
  auto ref_launcher = generate_launcher_header(ref_header);
  if (!ref_launcher) return make_error("the task's reference.cu: " + ref_launcher.error());
  auto selftest = generate_selftest_source(task);
  if (!selftest) return make_error("self-test: " + selftest.error());
  auto plan = generate_python_plan(task, *input.kernel, kernel_image->image, input.tunables,
                                   &*reference, &reference_image->image);
  if (!plan) return make_error(plan.error());
  files.push_back({name + ".reference.cu", *input.reference_source});
  files.push_back({name + ".reference.cuh", *ref_launcher});
  files.insert(files.end(), reference_image->files.begin(), reference_image->files.end());
  files.push_back({name + "_reference_api.cc",
                   generate_api_source(task, true, name + ".reference.cuh", reference_namespace)});
  files.push_back({name + "_selftest.cc", *selftest});
  files.push_back({"kopt_plan_" + name + ".py", *plan});
  bundle.has_reference = true;
  bundle.reference_image = reference_image->manifest;
  return files;
}

Result<std::vector<BundleFile>> generate_shared_files(const std::vector<BundleTask>& tasks) {
  std::vector<BundleFile> files;
  files.push_back({"CMakeLists.txt", generate_cmake_lists(tasks)});
  files.push_back({"kopt_selftest.h", selftest_support_header()});
  files.push_back({"kopt_cuda_image.h", image_loader_header()});
  auto torch = generate_torch_files(tasks);
  if (!torch) return make_error(torch.error());
  files.insert(files.end(), torch->begin(), torch->end());
  return files;
}

}  // namespace kopt::exporter
