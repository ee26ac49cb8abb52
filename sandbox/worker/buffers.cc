#include "sandbox/worker/buffers.h"

#include <algorithm>
#include <random>

#include "sandbox/worker/memory_patterns.h"

namespace kopt::worker {
namespace {

GuardPainter& painter() {
  static GuardPainter p;
  return p;
}

// A new seed per armed buffer, from the random device: no two buffers' guards agree, and no run
// of the worker repeats another's.
uint64_t fresh_guard_seed() {
  static std::mt19937_64 rng{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};
  return rng();
}

Status paint_on_host(Device& device, CUdeviceptr base, size_t bytes, uint64_t seed) {
  std::vector<uint64_t> words((bytes + 7) / 8);
  for (size_t w = 0; w < words.size(); ++w) words[w] = guard_word(seed, w);  // little-endian
  CudaFailure failure;
  if (!device.check(device.driver().cuMemcpyHtoD(base, words.data(), bytes), "cuMemcpyHtoD(guard)",
                    &failure))
    return make_error(failure.message);
  return ok_status();
}

}  // namespace

void set_guard_painter(GuardPainter p) { painter() = std::move(p); }

namespace {
bool& exact_flag() {
  static bool exact = false;
  return exact;
}
}  // namespace

void set_exact_allocations(bool exact) { exact_flag() = exact; }
bool exact_allocations() { return exact_flag(); }

Result<GuardedBuffer> GuardedBuffer::create(Device& device, DType dtype, int64_t elements) {
  size_t payload = size_t(elements) * dtype_size(dtype);
  bool exact = exact_allocations();
  // An empty buffer still needs an address: one element's bytes.
  size_t bytes = exact ? std::max(payload, dtype_size(dtype)) : guarded_allocation_bytes(payload);
  auto memory = allocate(device, bytes);
  if (!memory) return make_error(memory.error());
  GuardedBuffer b;
  b.device_ = &device;
  b.memory_ = std::move(*memory);
  b.dtype_ = dtype;
  b.elements_ = elements;
  b.head_bytes_ = exact ? 0 : kGuardBytes;
  if (auto s = b.arm_guards(); !s) return make_error(s.error());
  return b;
}

Status GuardedBuffer::arm_guards() {
  seed_ = fresh_guard_seed();
  Status painted = make_error("no guard painter");
  if (painter()) painted = painter()(memory_.ptr(), memory_.bytes(), seed_);
  if (!painted) {
    if (device_->context_lost()) return painted;
    if (auto s = paint_on_host(*device_, memory_.ptr(), memory_.bytes(), seed_); !s) return s;
  }
  CudaFailure failure;
  if (!device_->check(device_->driver().cuStreamSynchronize(device_->stream()),
                      "cuStreamSynchronize", &failure))
    return make_error(failure.message);
  return ok_status();
}

GuardZones GuardedBuffer::guard_zones() const {
  size_t tail_start = head_bytes_ + size_t(elements_) * dtype_size(dtype_);
  return {memory_.ptr(), head_bytes_, tail_start, memory_.bytes(), seed_};
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
