// `kopt export`: the best verified kernel of each task, written into a folder of the user's
// repository with everything needed to use and trust it:
//
//   DIR/<task>.cu      the kernel file as verified, with its kopt:plan (for reading: the stored
//                      source re-hashed against its sha256, never compiled by the export's build)
//   DIR/<task>_image.cc, .cubin, .ptx   its device code, compiled by kopt's NVRTC
//   DIR/<task>.cuh     a C++ header with a host launcher (launcher_codegen.h)
//   DIR/manifest.json  provenance of every exported kernel (format kManifestFormat)
//   DIR/README.md      a table of the kernels, inside kopt's markers (the rest is left alone)
//   and what drops the folder into CMake and PyTorch projects, with a self-test of each kernel
//   against its task's reference (export_bundle.h)
//
// Files are rewritten only when their bytes change, so exporting twice changes nothing. No name
// may leave DIR: a task whose name is not a plain file name is refused before anything is written.
// A file in DIR that kopt did not write (or wrote and the user changed since) is never replaced:
// the export stops naming it, before writing anything.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/memory_store.h"

namespace kopt::exporter {

// 2: the CMake, self-test and PyTorch files, and their keys in each kernel's entry.
// 3: the device code kopt compiled ("image", "reference_image": CUBIN/PTX files, sha256, NVRTC
//    options), plain C++ and Python files that compile no kernel source, and "files": the sha256
//    of every file the export wrote, so that only those are ever replaced.
inline constexpr int kManifestFormat = 3;

struct ExportOptions {
  std::filesystem::path out_dir;
  std::string task;         // one task; empty: every task in the memory
  std::string gpu;          // GPU model (exact, or a unique case-insensitive part of one);
                            // empty: per task, the GPU with the most verified evaluations
  bool git_commit = false;  // commit the changed files in the repository holding out_dir
  // A task is exported only when its best kernel is more than this many times as fast as the
  // baseline: by default only real wins reach the user's repository, never the baseline itself.
  double min_speedup = 1.0;
  // Where the tasks' folders are, for each task's reference.cu (the self-test's oracle); a task
  // whose task.json there differs from the memory's is exported without a self-test.
  std::filesystem::path tasks_root;
  // Asked about each chosen kernel before anything is written (kopt export runs compute-sanitizer
  // here): a non-empty answer keeps the task out of the export, reported as skipped with it.
  std::function<std::string(const std::string& task_json, const std::string& reference_source,
                            const std::string& kernel_source)>
      vet;
  // A kernel judged under an older task spec or verifier than the current ones (the task's
  // folder under tasks_root, else the memory's newest spec; `verifier_version`) is refused
  // unless this is set (memory_store/judging_staleness.h).
  bool allow_stale_judgment = false;
  int verifier_version = 0;  // the current verifier (sandbox/judging_spec.h); 0: not checked
};

struct ExportedKernel {
  std::string task;
  std::string gpu_model;
  double speedup = 0;
  double sol_percent = 0;
  std::string sha256;
  bool changed = false;  // some file of this kernel was written
};

struct ExportReport {
  std::vector<ExportedKernel> kernels;
  std::vector<std::string> skipped;  // "softmax: no verified kernel on NVIDIA H100"
  // Tasks whose best kernel was refused for a stale judgment, with why and what to do.
  std::vector<std::string> refused_stale;
  std::vector<std::filesystem::path> written;  // files whose bytes changed
  std::string commit;                          // the commit made with git_commit, if any
};

// Exports the best kernels of `store` as described above.
Result<ExportReport> export_kernels(memory::MemoryStore& store, const ExportOptions& options);

// True when `name` is a single, plain file-name component (no '/', not "." or "..", no NUL or
// control characters, not hidden), so DIR/name stays inside DIR.
bool is_safe_file_stem(const std::string& name);

}  // namespace kopt::exporter
