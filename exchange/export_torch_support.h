// The fixed text of the export's Python files (export_torch_codegen.cc fills in the tables).
#pragma once

#include <string>

namespace kopt::exporter {

const char* torch_module_head();  // kopt_torch.py up to its TASKS table
std::string torch_module_body();  // the checks and the driver-API launcher
const char* torch_module_tail();  // the torch.library registration of _OPS
const char* pytest_head();        // test_kopt_kernels.py up to its TASKS list
std::string pytest_body();        // the self-tests and the PyTorch checks

}  // namespace kopt::exporter
