// The files that make an export folder drop into a CMake project and a PyTorch codebase, and
// keep it verifiable there:
//
//   CMakeLists.txt        a library target kopt::TASK per task, plain C++ (no CUDA compiler: the
//                         device code is kopt's NVRTC output), usable with add_subdirectory;
//                         self-tests with ctest
//   TASK.cu               the verified source, for reading only: nothing compiles it
//   TASK_image.cc, TASK.cubin, TASK.ptx   the device code kopt compiled (export_device_image.h)
//   TASK.cuh, kopt_cuda_image.h            the launcher that loads and launches it
//   TASK_api.h / .cc      plain C++ entry points (export_api_codegen.h)
//   TASK.reference.*, TASK_reference_*    the task's reference, compiled the same way, for the
//                                         self-test
//   TASK_selftest.cc, kopt_selftest.h     the self-test (export_selftest_codegen.h)
//   kopt_plan_TASK.py, kopt_torch.py      the PyTorch binding: the same device code launched
//                                         through the driver API by ctypes, nothing to build
//   test_kopt_kernels.py                  the same checks under pytest
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "exchange/export_device_image.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

// One exported task as the folder-wide files need it.
struct BundleTask {
  TaskSpec spec;
  std::string cuda_architecture;  // "90" for compute capability 9.0
  bool has_reference = false;     // the reference's files are in the folder
  std::string provenance;         // "1.11x over the baseline on NVIDIA H100 ..."
  // What the manifest records of the device code (the kernel's; the reference's under
  // "reference_image"): file names and sha256 of the CUBIN and PTX, the NVRTC options.
  nlohmann::json image;
  nlohmann::json reference_image;
};

struct BundleFile {
  std::string name;  // a file name in the export folder
  std::string contents;
};

// What one task's files are made from.
struct TaskFilesInput {
  const TaskSpec* task = nullptr;
  const KernelFile* kernel = nullptr;           // parsed from kernel_source
  std::string kernel_source;                    // as verified
  std::map<std::string, int64_t> tunables;      // the verified values
  std::string provenance;                       // one line for the headers
  std::optional<std::string> reference_source;  // the task's reference.cu, when found
  std::string compute_capability;               // of the GPU it was verified on: "9.0"
  std::string verified_cubin_sha256;            // of the CUBIN judged ("" for an older evaluation)
};

// TASK.cu, its device code and launcher, TASK_api.h, TASK_api.cc, kopt_plan_TASK.py and, with a
// reference, the same of TASK.reference.cu and TASK_selftest.cc. The kernel file and the
// reference are compiled by NVRTC here; an error when either does not compile. `bundle` gets
// the task's entry for the folder-wide files (cuda_architecture and provenance are the
// caller's).
Result<std::vector<BundleFile>> generate_task_files(const TaskFilesInput& input,
                                                    BundleTask& bundle);

// CMakeLists.txt, kopt_selftest.h, kopt_cuda_image.h and the PyTorch files for every task of
// the folder.
Result<std::vector<BundleFile>> generate_shared_files(const std::vector<BundleTask>& tasks);

// The task's reference.cu under `tasks_root` (TASK/reference.cu beside a task.json whose
// sha256 is `spec_hash`), or nullopt: a reference of another version of the task would check the
// kernel against the wrong oracle.
std::optional<std::string> find_reference_source(const std::filesystem::path& tasks_root,
                                                 const std::string& task,
                                                 const std::string& spec_hash);

// "90" from "9.0"; "" when the text is not MAJOR.MINOR.
std::string cuda_architecture_of(const std::string& compute_capability);

// CMakeLists.txt for `tasks`.
std::string generate_cmake_lists(const std::vector<BundleTask>& tasks);

// kopt_torch.py and test_kopt_kernels.py for `tasks`.
Result<std::vector<BundleFile>> generate_torch_files(const std::vector<BundleTask>& tasks);

// kopt_plan_TASK.py: the launch plans of the kernel (and of the reference) over their device
// code files, for kopt_torch.py.
Result<std::string> generate_python_plan(const TaskSpec& task, const KernelFile& kernel,
                                         const DeviceImage& image,
                                         const std::map<std::string, int64_t>& tunables,
                                         const KernelFile* reference,
                                         const DeviceImage* reference_image);

// A plan expression over sizes as Python over the dict `s`, every operation a _kopt_ helper of
// python_plan_arithmetic(): C++'s truncating division and checked 64-bit overflow, as the
// sandbox evaluated it (Python's // floors: -7 // 2 is -4 where the sandbox says -3).
Result<std::string> expression_to_python(const std::string& expression);

// The _kopt_add, _kopt_div, ... helpers every generated Python module defines.
const char* python_plan_arithmetic();

}  // namespace kopt::exporter
