// The fixed text of the export's Python files (export_torch_codegen.cc fills in the tables).
#pragma once

namespace kopt::exporter {

const char* torch_module_head();   // kopt_torch.py up to its TASKS table
const char* torch_module_body();   // the checks and the driver-API launcher
const char* torch_module_tail();   // the torch.library registration of _OPS
const char* pytest_head();         // test_kopt_kernels.py up to its TASKS list
const char* pytest_body();

}  // namespace kopt::exporter
