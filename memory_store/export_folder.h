// What an export folder as a whole is made of, beyond this export's kernels: the tasks that the
// folder-wide files (CMakeLists.txt, the PyTorch binding) cover, and the git commit message.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memory_store/export_bundle.h"
#include "memory_store/kernel_export.h"
#include "memory_store/memory_store.h"

namespace kopt::exporter {

// This export's tasks, plus those of the manifest's `kernels` exported earlier with their CMake
// and PyTorch files (an "api_header" entry) whose spec the memory still has; others are named in
// `skipped` and left out of the folder-wide files.
std::vector<BundleTask> folder_tasks(memory::MemoryStore& store, const nlohmann::json& kernels,
                                     const std::map<std::string, BundleTask>& exported,
                                     std::vector<std::string>& skipped);

// "kopt export: axpy 1.11x, softmax 2.00x on NVIDIA H100 80GB HBM3", a line per kernel and the
// kopt version.
std::string commit_message(const std::vector<ExportedKernel>& kernels);

}  // namespace kopt::exporter
