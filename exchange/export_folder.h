// What an export folder as a whole is made of, beyond this export's kernels: the tasks that the
// folder-wide files (CMakeLists.txt, the PyTorch binding) cover, and the git commit message.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "exchange/export_bundle.h"
#include "exchange/kernel_export.h"
#include "memory_store/memory_store.h"

namespace kopt::exporter {

// This export's tasks, plus those of the manifest's `kernels` exported earlier with their CMake
// and PyTorch files (an "api_header" entry) whose spec the memory still has; others are named in
// `skipped` and left out of the folder-wide files.
std::vector<BundleTask> folder_tasks(memory::MemoryStore& store, const nlohmann::json& kernels,
                                     const std::map<std::string, BundleTask>& exported,
                                     std::vector<std::string>& skipped);

// A file the export plans to write: its name in the folder and its bytes.
struct PlannedWrite {
  std::string name;
  const std::string* contents = nullptr;
};

// Before anything is written: refuses (naming the file) the first planned file that exists with
// other bytes and is not one kopt wrote there and the user left as it was. What kopt wrote is
// the "files" map of `manifest` (name -> sha256 of the bytes written); a manifest of an older
// format has none, and then a file counts as kopt's when it starts with kopt's generated-file
// marker or is an entry's kernel or reference file with the entry's hash. A symbolic link, a
// folder or an unreadable file in a planned file's place is refused too.
Status check_overwrites(const std::filesystem::path& dir, const std::vector<PlannedWrite>& planned,
                        const nlohmann::json& manifest);

// The "files" map of the new manifest: the old one's entries, with every planned file's sha256.
nlohmann::json written_files(const nlohmann::json& manifest,
                             const std::vector<PlannedWrite>& planned);

// True when `text` starts with the marker of a file kopt export generates.
bool is_kopt_generated(const std::string& text);

// "kopt export: axpy 1.11x, softmax 2.00x on NVIDIA H100 80GB HBM3", a line per kernel and the
// kopt version.
std::string commit_message(const std::vector<ExportedKernel>& kernels);

}  // namespace kopt::exporter
