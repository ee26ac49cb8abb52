#include "sandbox/worker/cublaslt_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace kopt::worker {
namespace {

namespace fs = std::filesystem;

// Newest first: one soname per major version this worker's header describes the ABI of.
const char* const kSonames[] = {"libcublasLt.so.13", "libcublasLt.so.12"};

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  if (const char* explicit_path = std::getenv("KOPT_CUBLASLT"); explicit_path && *explicit_path)
    paths.push_back(explicit_path);
  std::vector<fs::path> folders;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) folders.push_back(fs::path(home) / "lib64");
  folders.push_back("/usr/local/cuda/lib64");
  // PyTorch's CUDA wheels bring their own copy (nvidia-cublas-cu12).
  for (const char* root : {"/usr/lib", "/usr/local/lib", "/opt/conda/lib"}) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(root, error)) {
      std::string name = entry.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* packages : {"site-packages", "dist-packages"})
        folders.push_back(entry.path() / packages / "nvidia" / "cublas" / "lib");
    }
  }
  for (const auto& folder : folders)
    for (const char* soname : kSonames) {
      std::error_code error;
      if (fs::exists(folder / soname, error)) paths.push_back((folder / soname).string());
    }
  for (const char* soname : kSonames) paths.push_back(soname);
  return paths;
}

Result<CublasLt> load_once() {
  std::string tried;
  for (const std::string& path : candidate_paths()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    CublasLt lib;
    lib.path = path;
    std::string missing;
    auto resolve = [&](auto& fn, const char* name) {
      void* sym = dlsym(handle, name);
      if (!sym) missing += std::string(" ") + name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
    };
#define KOPT_RESOLVE(name) resolve(lib.name, #name)
    KOPT_RESOLVE(cublasLtCreate);
    KOPT_RESOLVE(cublasLtDestroy);
    KOPT_RESOLVE(cublasLtGetVersion);
    KOPT_RESOLVE(cublasLtMatmulDescCreate);
    KOPT_RESOLVE(cublasLtMatmulDescDestroy);
    KOPT_RESOLVE(cublasLtMatmulDescSetAttribute);
    KOPT_RESOLVE(cublasLtMatrixLayoutCreate);
    KOPT_RESOLVE(cublasLtMatrixLayoutDestroy);
    KOPT_RESOLVE(cublasLtMatmulPreferenceCreate);
    KOPT_RESOLVE(cublasLtMatmulPreferenceDestroy);
    KOPT_RESOLVE(cublasLtMatmulPreferenceSetAttribute);
    KOPT_RESOLVE(cublasLtMatmulAlgoGetHeuristic);
    KOPT_RESOLVE(cublasLtMatmul);
#undef KOPT_RESOLVE
    if (!missing.empty()) {
      tried += "\n  " + path + ": lacks" + missing;
      dlclose(handle);
      continue;
    }
    lib.version = lib.cublasLtGetVersion();
    return lib;
  }
  return make_error("cuBLASLt could not be loaded (set KOPT_CUBLASLT to libcublasLt.so.13 or .12);"
                    " tried:" + tried);
}

}  // namespace

std::string CublasLt::version_text() const {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

Result<const CublasLt*> load_cublaslt() {
  static std::once_flag once;
  static Result<CublasLt> loaded = make_error("not loaded");
  std::call_once(once, [] { loaded = load_once(); });
  if (!loaded) return make_error(loaded.error());
  return &*loaded;
}

std::string describe_cublas_status(int status) {
  const char* name = "CUBLAS_STATUS_UNKNOWN";
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: name = "CUBLAS_STATUS_SUCCESS"; break;
    case CUBLAS_STATUS_NOT_INITIALIZED: name = "CUBLAS_STATUS_NOT_INITIALIZED"; break;
    case CUBLAS_STATUS_ALLOC_FAILED: name = "CUBLAS_STATUS_ALLOC_FAILED"; break;
    case CUBLAS_STATUS_INVALID_VALUE: name = "CUBLAS_STATUS_INVALID_VALUE"; break;
    case CUBLAS_STATUS_ARCH_MISMATCH: name = "CUBLAS_STATUS_ARCH_MISMATCH"; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: name = "CUBLAS_STATUS_EXECUTION_FAILED"; break;
    case CUBLAS_STATUS_INTERNAL_ERROR: name = "CUBLAS_STATUS_INTERNAL_ERROR"; break;
    case CUBLAS_STATUS_NOT_SUPPORTED: name = "CUBLAS_STATUS_NOT_SUPPORTED"; break;
    default: break;
  }
  return std::string(name) + " (" + std::to_string(status) + ")";
}

}  // namespace kopt::worker
