#include "sandbox/worker/device.h"

#include "sandbox/compiler.h"

namespace kopt::worker {

std::string DeviceInfo::arch() const { return arch_of_compute_capability(cc_major, cc_minor); }

nlohmann::json DeviceInfo::to_json() const {
  return {{"name", name},
          {"ordinal", ordinal},
          {"cc", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
          {"arch", arch()},
          {"sms", sm_count},
          {"l2_bytes", l2_bytes},
          {"driver", std::to_string(driver_version / 1000) + "." +
                         std::to_string((driver_version % 1000) / 10)}};
}

bool Device::check(CUresult result, const char* call, CudaFailure* failure) {
  if (result == CUDA_SUCCESS) return true;
  bool sticky = is_sticky_cuda_error(result);
  context_lost_ = context_lost_ || sticky;
  if (failure) *failure = {driver_->describe(call, result), result, sticky};
  return false;
}

std::string gpu_turn_name(const std::string& pci_bus_id, int ordinal) {
  return pci_bus_id.empty() ? std::to_string(ordinal) : pci_bus_id;
}

Result<std::string> gpu_turn_id(int ordinal) {
  auto driver = load_cuda_driver();
  if (!driver) return make_error(driver.error());
  const CudaDriver& d = **driver;
  CUdevice device = 0;
  CUresult rc = d.cuDeviceGet(&device, ordinal);
  if (rc != CUDA_SUCCESS) return make_error(d.describe("cuDeviceGet", rc));
  char bus_id[64] = {};
  if (d.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != CUDA_SUCCESS) bus_id[0] = 0;
  return gpu_turn_name(bus_id, ordinal);
}

Result<Device*> Device::open(int ordinal) {
  static Device device;
  auto driver = load_cuda_driver();
  if (!driver) return make_error(driver.error());
  device.driver_ = *driver;
  const CudaDriver& d = **driver;
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return make_error("no GPU: the driver sees no device");
  if (ordinal < 0 || ordinal >= count)
    return make_error("no GPU " + std::to_string(ordinal) + " (this machine has " +
                      std::to_string(count) + ")");
  CUresult rc = d.cuDeviceGet(&device.device_, ordinal);
  if (rc != CUDA_SUCCESS) return make_error(d.describe("cuDeviceGet", rc));
  DeviceInfo& info = device.info_;
  info.ordinal = ordinal;
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof name, device.device_);
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    d.cuDeviceGetAttribute(&v, a, device.device_);
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.max_shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.cuDriverGetVersion(&info.driver_version);
  char bus_id[64] = {};
  if (d.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device.device_) == CUDA_SUCCESS)
    info.pci_bus_id = bus_id;
  rc = d.cuDevicePrimaryCtxRetain(&device.context_, device.device_);
  if (rc != CUDA_SUCCESS) return make_error(d.describe("cuDevicePrimaryCtxRetain", rc));
  rc = d.cuCtxSetCurrent(device.context_);
  if (rc != CUDA_SUCCESS) return make_error(d.describe("cuCtxSetCurrent", rc));
  rc = d.cuStreamCreate(&device.stream_, CU_STREAM_DEFAULT);
  if (rc != CUDA_SUCCESS) return make_error(d.describe("cuStreamCreate", rc));
  return &device;
}

bool Device::release_context() {
  if (abandoned() || !context_) return false;
  (void)driver_->cuCtxSynchronize();
  (void)driver_->cuDevicePrimaryCtxRelease(device_);  // the last reference: the context is reset
  context_ = nullptr;
  context_lost_ = true;
  abandoned_flag() = true;
  return true;
}

Result<DeviceMemory> allocate(Device& device, size_t bytes) {
  CUdeviceptr ptr = 0;
  CudaFailure failure;
  if (!device.check(device.driver().cuMemAlloc(&ptr, bytes ? bytes : 1), "cuMemAlloc", &failure))
    return make_error(failure.message + " allocating " + std::to_string(bytes) + " bytes");
  return DeviceMemory(&device.driver(), ptr, bytes);
}

MemoryInfo memory_info(Device& device) {
  MemoryInfo info;
  if (device.driver().cuMemGetInfo(&info.free_bytes, &info.total_bytes) != CUDA_SUCCESS)
    return MemoryInfo{};
  return info;
}

namespace {

Status wait_after(Device& device, CUresult copied, const char* call) {
  CudaFailure failure;
  if (!device.check(copied, call, &failure) ||
      !device.check(device.driver().cuStreamSynchronize(device.stream()), "cuStreamSynchronize",
                    &failure))
    return make_error(failure.message);
  return ok_status();
}

}  // namespace

Status copy_to_host(Device& device, void* host, CUdeviceptr from, size_t bytes) {
  return wait_after(device, device.driver().cuMemcpyDtoHAsync(host, from, bytes, device.stream()),
                    "cuMemcpyDtoHAsync");
}

Status copy_to_device(Device& device, CUdeviceptr to, const void* host, size_t bytes) {
  return wait_after(device, device.driver().cuMemcpyHtoDAsync(to, host, bytes, device.stream()),
                    "cuMemcpyHtoDAsync");
}

Result<std::vector<float>> time_with_events(Device& device, CUstream stream, int reps,
                                            const std::function<Status(int rep)>& launch) {
  auto start = Event::create(device);
  if (!start) return make_error(start.error());
  auto stop = Event::create(device);
  if (!stop) return make_error(stop.error());
  const CudaDriver& d = device.driver();
  std::vector<float> times;
  for (int rep = 0; rep < reps; ++rep) {
    d.cuEventRecord(start->get(), stream);
    if (Status launched = launch(rep); !launched) return make_error(launched.error());
    d.cuEventRecord(stop->get(), stream);
    d.cuEventSynchronize(stop->get());
    float ms = 0;
    d.cuEventElapsedTime(&ms, start->get(), stop->get());
    times.push_back(ms);
  }
  return times;
}

}  // namespace kopt::worker
