// Holds a CUDA context on one GPU until its stdin closes, the way an idle helper of kopt's own
// does (the PyTorch process that times production baselines keeps its context between ops):
// tests of the busy-GPU check start it beside the worker. The driver is loaded at run time
// (sandbox/cuda_driver.h, never linked), so the program builds and starts on machines without
// one and says why it cannot hold anything.
//
//   kopt_gpu_context_holder [DEVICE]   prints "ready PID" once the context holds 64 MiB, or
//                                      "error: ..." and exits 1; exits 0 when stdin closes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sandbox/cuda_driver.h"

namespace {

int fail(const std::string& what) {
  std::printf("error: %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int device_index = argc > 1 ? std::atoi(argv[1]) : 0;
  auto driver = kopt::load_cuda_driver();
  if (!driver) return fail(driver.error());
  const kopt::CudaDriver& cu = **driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUdeviceptr memory = 0;
  if (CUresult r = cu.cuInit(0); r != CUDA_SUCCESS) return fail("cuInit: " + std::to_string(r));
  if (CUresult r = cu.cuDeviceGet(&device, device_index); r != CUDA_SUCCESS) {
    return fail("cuDeviceGet(" + std::to_string(device_index) + "): " + std::to_string(r));
  }
  // The primary context, as the CUDA runtime (and so PyTorch) creates it.
  if (CUresult r = cu.cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS) {
    return fail("cuDevicePrimaryCtxRetain: " + std::to_string(r));
  }
  if (CUresult r = cu.cuCtxSetCurrent(context); r != CUDA_SUCCESS) {
    return fail("cuCtxSetCurrent: " + std::to_string(r));
  }
  if (CUresult r = cu.cuMemAlloc(&memory, size_t{64} << 20); r != CUDA_SUCCESS) {
    return fail("cuMemAlloc: " + std::to_string(r));
  }
  std::printf("ready %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  // Idle until the test is done with it: no kernel runs, only the context and its memory stay.
  char buffer[256];
  while (::read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
  }
  return 0;  // the driver frees the context and its memory with the process
}
