// cuBLASLt, loaded at run time with dlopen like the driver (sandbox/cuda_driver.h): kopt never
// links it, so every binary starts on a machine without it, and a worker that finds none says so
// only when a task asks for a cuBLASLt baseline. cublasLt.h is used for its types alone.
#pragma once

#include <cublasLt.h>

#include <string>

#include "common/result.h"

namespace kopt::worker {

struct CublasLt {
#define KOPT_CUBLASLT_FN(name) decltype(&::name) name = nullptr
  KOPT_CUBLASLT_FN(cublasLtCreate);
  KOPT_CUBLASLT_FN(cublasLtDestroy);
  KOPT_CUBLASLT_FN(cublasLtGetVersion);
  KOPT_CUBLASLT_FN(cublasLtMatmulDescCreate);
  KOPT_CUBLASLT_FN(cublasLtMatmulDescDestroy);
  KOPT_CUBLASLT_FN(cublasLtMatmulDescSetAttribute);
  KOPT_CUBLASLT_FN(cublasLtMatrixLayoutCreate);
  KOPT_CUBLASLT_FN(cublasLtMatrixLayoutDestroy);
  KOPT_CUBLASLT_FN(cublasLtMatmulPreferenceCreate);
  KOPT_CUBLASLT_FN(cublasLtMatmulPreferenceDestroy);
  KOPT_CUBLASLT_FN(cublasLtMatmulPreferenceSetAttribute);
  KOPT_CUBLASLT_FN(cublasLtMatmulAlgoGetHeuristic);
  KOPT_CUBLASLT_FN(cublasLtMatmul);
#undef KOPT_CUBLASLT_FN
  std::string path;     // the file that was loaded
  size_t version = 0;   // cublasLtGetVersion(): 130100 is 13.1.0
  std::string version_text() const;  // "13.1.0"
};

// Loaded once per process: $KOPT_CUBLASLT (a file) if set, else the toolkit's (CUDA_HOME,
// /usr/local/cuda), else a PyTorch wheel's (nvidia/cublas/lib under the Python paths), else
// the dynamic loader's search by soname. The error lists where it looked.
Result<const CublasLt*> load_cublaslt();

// "CUBLAS_STATUS_NOT_SUPPORTED (15)" for a status code.
std::string describe_cublas_status(int status);

}  // namespace kopt::worker
