#include "sandbox/worker/cold_l2.h"

#include <algorithm>

namespace kopt::worker {

Result<ColdL2> ColdL2::create(Device& device) {
  size_t bytes = std::max<size_t>(size_t(device.info().l2_bytes) * 2, size_t(128) << 20);
  auto buffer = allocate(device, bytes);
  if (!buffer) return make_error(buffer.error());
  return ColdL2(device, std::move(*buffer));
}

bool ColdL2::queue(CUstream stream, unsigned value, CudaFailure* failure) {
  const CudaDriver& d = device_->driver();
  return device_->check(d.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache",
                        failure) &&
         device_->check(d.cuMemsetD32Async(buffer_.ptr(), value, buffer_.bytes() / 4, stream),
                        "cuMemsetD32Async(L2 flush)", failure);
}

}  // namespace kopt::worker
