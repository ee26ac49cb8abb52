#pragma once
// What a compiled CUBIN keeps from one launch to the next. A kernel's only memory that outlives a
// launch without the plan's knowledge is module-scope __device__ data (the writable .nv.global
// sections) and the device heap (malloc/new in device code); outputs and scratch are poisoned or
// zeroed per run by the worker. Read from the CUBIN's ELF headers, no GPU needed.

#include <cstddef>
#include <string_view>

#include "common/result.h"

namespace kopt {

struct CubinState {
  size_t writable_global_bytes = 0;  // .nv.global and .nv.global.init together
  bool uses_device_heap = false;     // calls malloc/free/aligned malloc on the device
};

// The state a CUBIN can carry between launches; an error for a file that is not a 64-bit ELF.
Result<CubinState> read_cubin_state(std::string_view cubin);

}  // namespace kopt
