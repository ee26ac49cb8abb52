#include "sandbox/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace kopt {

std::string CudaDriver::describe(const char* call, CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(result, &name);
  if (cuGetErrorString) cuGetErrorString(result, &text);
  return std::string(call) + ": " + (name ? name : std::to_string(int(result))) + " (" +
         (text ? text : "unknown") + ")";
}

bool is_sticky_cuda_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

namespace {

Result<CudaDriver> load_once() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return make_error("no NVIDIA driver: libcuda.so.1 could not be loaded (" +
                      std::string(dlerror()) + "); this command needs a GPU");
  }
  CudaDriver d;
  std::string missing;
  // Versioned names first: cuda.h maps several calls to _v2 symbols.
  auto resolve = [&](auto& fn, const char* name, const char* versioned) {
    void* sym = versioned ? dlsym(handle, versioned) : nullptr;
    if (!sym) sym = dlsym(handle, name);
    if (!sym) missing += std::string(" ") + name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
#define KOPT_RESOLVE(name) resolve(d.name, #name, nullptr)
#define KOPT_RESOLVE_V2(name) resolve(d.name, #name, #name "_v2")
  KOPT_RESOLVE(cuInit);
  KOPT_RESOLVE(cuDriverGetVersion);
  KOPT_RESOLVE(cuDeviceGetCount);
  KOPT_RESOLVE(cuDeviceGet);
  KOPT_RESOLVE(cuDeviceGetName);
  KOPT_RESOLVE(cuDeviceGetAttribute);
  KOPT_RESOLVE_V2(cuDeviceTotalMem);
  KOPT_RESOLVE(cuDevicePrimaryCtxRetain);
  KOPT_RESOLVE_V2(cuDevicePrimaryCtxRelease);
  KOPT_RESOLVE(cuCtxSetCurrent);
  KOPT_RESOLVE(cuCtxSynchronize);
  KOPT_RESOLVE(cuCtxResetPersistingL2Cache);
  KOPT_RESOLVE(cuModuleLoadData);
  KOPT_RESOLVE(cuModuleUnload);
  KOPT_RESOLVE(cuModuleGetFunction);
  KOPT_RESOLVE(cuFuncGetAttribute);
  KOPT_RESOLVE(cuFuncSetAttribute);
  KOPT_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor);
  KOPT_RESOLVE(cuLaunchKernel);
  KOPT_RESOLVE_V2(cuMemAlloc);
  KOPT_RESOLVE_V2(cuMemFree);
  KOPT_RESOLVE_V2(cuMemcpyHtoD);
  KOPT_RESOLVE_V2(cuMemcpyDtoH);
  KOPT_RESOLVE_V2(cuMemcpyDtoD);
  KOPT_RESOLVE_V2(cuMemsetD8);
  KOPT_RESOLVE_V2(cuMemsetD32);
  KOPT_RESOLVE(cuMemsetD8Async);
  KOPT_RESOLVE(cuMemsetD32Async);
  KOPT_RESOLVE_V2(cuMemcpyHtoDAsync);
  KOPT_RESOLVE_V2(cuMemcpyDtoHAsync);
  KOPT_RESOLVE_V2(cuMemcpyDtoDAsync);
  KOPT_RESOLVE_V2(cuMemGetInfo);
  KOPT_RESOLVE(cuStreamCreate);
  KOPT_RESOLVE_V2(cuStreamDestroy);
  KOPT_RESOLVE(cuStreamSynchronize);
  KOPT_RESOLVE(cuStreamQuery);
  KOPT_RESOLVE(cuStreamWaitEvent);
  KOPT_RESOLVE(cuDeviceGetPCIBusId);
  KOPT_RESOLVE(cuEventCreate);
  KOPT_RESOLVE_V2(cuEventDestroy);
  KOPT_RESOLVE(cuEventRecord);
  KOPT_RESOLVE(cuEventSynchronize);
  KOPT_RESOLVE_V2(cuEventElapsedTime);
  KOPT_RESOLVE(cuGetErrorName);
  KOPT_RESOLVE(cuGetErrorString);
  KOPT_RESOLVE(cuProfilerStart);
  KOPT_RESOLVE(cuProfilerStop);
#undef KOPT_RESOLVE
#undef KOPT_RESOLVE_V2
  d.cuFuncGetParamInfo =
      reinterpret_cast<decltype(d.cuFuncGetParamInfo)>(dlsym(handle, "cuFuncGetParamInfo"));
  if (!missing.empty()) return make_error("libcuda.so.1 lacks:" + missing);
  CUresult rc = d.cuInit(0);
  if (rc != CUDA_SUCCESS) return make_error("no usable GPU: " + d.describe("cuInit", rc));
  return d;
}

}  // namespace

Result<const CudaDriver*> load_cuda_driver() {
  static std::once_flag once;
  static Result<CudaDriver>* loaded = nullptr;
  std::call_once(once, [] { loaded = new Result<CudaDriver>(load_once()); });
  if (!*loaded) return make_error(loaded->error());
  return &loaded->value();
}

}  // namespace kopt
