// The files that make an export folder drop into a CMake project and a PyTorch codebase, and
// keep it verifiable there:
//
//   CMakeLists.txt        a library target kopt::TASK per task (CUDA_ARCHITECTURES of the GPU it
//                         was verified on), usable with add_subdirectory; self-tests with ctest
//   TASK_api.h / .cu      plain C++ entry points (export_api_codegen.h)
//   TASK.reference.cu/.cuh, TASK_reference_api.cu   the task's reference, for the self-test
//   TASK_selftest.cu, kopt_selftest.h               the self-test (export_selftest_codegen.h)
//   kopt_torch.py, kopt_torch_binding.cpp            the PyTorch binding (export_torch_codegen.h)
//   test_kopt_kernels.py                             the same checks under pytest
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

// One exported task as the folder-wide files need it.
struct BundleTask {
  TaskSpec spec;
  std::string cuda_architecture;             // "90" for compute capability 9.0
  std::vector<std::string> compile_options;  // the kernel's, as it was verified
  bool has_reference = false;                // TASK.reference.cu is in the folder
  std::vector<std::string> reference_compile_options;
  std::string provenance;  // "1.11x over the baseline on NVIDIA H100 ..."
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
};

// TASK.cu, TASK.cuh, TASK_api.h, TASK_api.cu and, with a reference, TASK.reference.cu,
// TASK.reference.cuh, TASK_reference_api.cu and TASK_selftest.cu. `bundle` gets the task's
// entry for the folder-wide files (cuda_architecture and provenance are the caller's).
Result<std::vector<BundleFile>> generate_task_files(const TaskFilesInput& input,
                                                    BundleTask& bundle);

// CMakeLists.txt, kopt_selftest.h and the PyTorch files for every task of the folder.
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

// kopt_torch.py, kopt_torch_binding.cpp and test_kopt_kernels.py for `tasks`.
Result<std::vector<BundleFile>> generate_torch_files(const std::vector<BundleTask>& tasks);

}  // namespace kopt::exporter
