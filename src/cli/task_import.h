// kopt tasks import: a PyTorch module (KernelBench style) -> a validated task folder. The work
// that needs PyTorch and the GPU is scripts/task_import.py's; this side stages, checks the staged
// task.json and kernels with kopt's own parser and compiler, and only then moves it into the suite.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kopt::cli {

struct ImportRequest {
  std::vector<std::string> files;
  std::filesystem::path tasks_root;
  std::string name;       // default: the file's stem
  std::string reference;  // a kernel file with its kopt:plan; "" = drafted by the coder model
  std::string function;   // a plain function instead of class Model
  std::string references; // --kernelbench: DIR with <problem stem>.cu
  bool kernelbench = false;
  std::string arch;       // for the compile check of the staged kernels
};

int import_tasks(const ImportRequest& request);

}  // namespace kopt::cli
