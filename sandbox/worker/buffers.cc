#include "sandbox/worker/buffers.h"

namespace kopt::worker {

Result<GuardedBuffer> GuardedBuffer::create(Device& device, DType dtype, int64_t elements) {
  size_t payload = size_t(elements) * dtype_size(dtype);
  // Round the payload up so the trailing guard starts aligned; the slack belongs to the guard.
  size_t padded = (payload + 255) / 256 * 256;
  auto memory = allocate(device, padded + 2 * kGuardBytes);
  if (!memory) return make_error(memory.error());
  GuardedBuffer b;
  b.device_ = &device;
  b.memory_ = std::move(*memory);
  b.dtype_ = dtype;
  b.elements_ = elements;
  if (auto s = b.arm_guards(); !s) return make_error(s.error());
  return b;
}

Status GuardedBuffer::arm_guards() {
  const CudaDriver& d = device_->driver();
  CudaFailure failure;
  if (!device_->check(
          d.cuMemsetD8Async(memory_.ptr(), kGuardPattern, memory_.bytes(), device_->stream()),
          "cuMemsetD8Async(guard)", &failure) ||
      !device_->check(d.cuStreamSynchronize(device_->stream()), "cuStreamSynchronize", &failure))
    return make_error(failure.message);
  return ok_status();
}

Result<std::string> GuardedBuffer::damaged_guard() {
  size_t payload = size_t(elements_) * dtype_size(dtype_);
  size_t tail_start = kGuardBytes + payload;
  size_t tail_bytes = memory_.bytes() - tail_start;
  std::vector<unsigned char> head(kGuardBytes), tail(tail_bytes);
  const CudaDriver& d = device_->driver();
  CudaFailure failure;
  if (!device_->check(d.cuMemcpyDtoH(head.data(), memory_.ptr(), kGuardBytes), "cuMemcpyDtoH",
                      &failure) ||
      !device_->check(d.cuMemcpyDtoH(tail.data(), memory_.ptr() + tail_start, tail_bytes),
                      "cuMemcpyDtoH", &failure))
    return make_error(failure.message);
  for (size_t i = 0; i < tail.size(); ++i) {
    if (tail[i] != kGuardPattern)
      return "a write " + std::to_string(i + 1) + " byte(s) past the end";
  }
  for (size_t i = head.size(); i-- > 0;) {
    if (head[i] != kGuardPattern)
      return "a write " + std::to_string(head.size() - i) + " bytes before the start";
  }
  return std::string();
}

GuardZones GuardedBuffer::guard_zones() const {
  size_t tail_start = kGuardBytes + size_t(elements_) * dtype_size(dtype_);
  return {memory_.ptr(), kGuardBytes, memory_.ptr() + tail_start, memory_.bytes() - tail_start};
}

std::string describe_guard_damage(uint64_t head_distance, uint64_t tail_offset) {
  if (tail_offset) return "a write " + std::to_string(tail_offset) + " byte(s) past the end";
  if (head_distance) return "a write " + std::to_string(head_distance) + " bytes before the start";
  return "";
}

Status fill_bytes(Device& device, const BufferRef& buffer, unsigned char value) {
  CudaFailure failure;
  if (buffer.bytes() == 0) return ok_status();
  if (!device.check(
          device.driver().cuMemsetD8Async(buffer.ptr, value, buffer.bytes(), device.stream()),
          "cuMemsetD8Async", &failure))
    return make_error(failure.message);
  return ok_status();
}

Status copy_buffer(Device& device, const BufferRef& from, const BufferRef& to) {
  CudaFailure failure;
  if (from.bytes() == 0) return ok_status();
  if (!device.check(device.driver().cuMemcpyDtoD(to.ptr, from.ptr, from.bytes()), "cuMemcpyDtoD",
                    &failure))
    return make_error(failure.message);
  return ok_status();
}

}  // namespace kopt::worker
