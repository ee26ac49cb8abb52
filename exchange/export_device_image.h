// What an export runs: the verified kernel source compiled by kopt's own NVRTC with the gate's
// options, never by a host compiler. The CUBIN is for the GPU the kernel was verified on; the
// PTX, of the same source and options for the architecture without its "a" features, lets the
// driver compile the kernel for other GPUs (none when the kernel uses such features). Both are
// written into the export as byte arrays of generated C++ (and as TASK.cubin / TASK.ptx for the
// PyTorch binding), loaded through the CUDA runtime's library API (cudaLibraryLoadData).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/kernel_file.h"

namespace kopt::exporter {

struct DeviceImage {
  std::string arch;  // "sm_90a": the CUBIN's, as the gate compiled for the verified GPU
  int cc_major = 0, cc_minor = 0;
  std::string cubin;
  std::string ptx;                   // portable PTX ("" when only the CUBIN can run the kernel)
  std::string ptx_target;            // "compute_90"
  std::vector<std::string> symbols;  // the lowered name of each distinct launched kernel
  std::vector<std::string> kernels;  // the plan's kernel names, in the same order
  std::vector<std::string> nvrtc_options;
  std::string nvrtc_version;
};

// Compiles `file` with its verified tunable values for `compute_capability`; an error (with
// NVRTC's log) when it does not compile: a kernel that compiled when verified must compile now.
Result<DeviceImage> compile_device_image(const KernelFile& file,
                                         const std::map<std::string, int64_t>& tunables,
                                         const std::string& compute_capability);

// `bytes` as a C++ definition `extern const unsigned char NAME[] = {...};` (aligned for the
// loader) and `extern const size_t NAME_size`.
std::string cpp_byte_array(const std::string& name, const std::string& bytes);

// The generated TASK_image.cc (or TASK_reference_image.cc): the CUBIN and the PTX (with its
// terminating NUL) of `image` as arrays named PREFIX_cubin and PREFIX_ptx.
std::string generate_image_source(const std::string& prefix, const DeviceImage& image,
                                  const std::string& source_name);

// kopt_cuda_image.h, the same in every export: loads an image on first use.
const char* image_loader_header();

}  // namespace kopt::exporter
