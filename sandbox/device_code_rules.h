// Device code only. A kernel file is judged by NVRTC, but an export hands the same text to a host
// compiler (nvcc, g++), which defines other macros and runs host code. So the gate refuses every
// construct whose meaning differs between the two or that runs on the host:
//  - preprocessor conditions on anything but macros this file defines at its top level (or the
//    plan's tunables): __CUDACC_RTC__, __NVCC__, __CUDA_ARCH__, __CUDACC__, CUDART_VERSION and
//    __has_include all differ between NVRTC and nvcc's host pass;
//  - token pasting (##) and _Pragma, which build names the rules cannot see;
//  - __DATE__, __TIME__, __TIMESTAMP__: a compile at another time would make another kernel;
//  - host code: __host__ anywhere, a function defined at namespace scope without a literal
//    __global__/__device__ (constexpr functions excepted: they never run on their own), a
//    namespace-scope variable that is not __device__/__constant__/__shared__/__managed__ or
//    constexpr, a static inline data member, top-level asm, constructor/section attributes;
//  - preprocessor branches that cut a declaration or a brace pair in two, so a branch the gate
//    reads cannot change where a function body begins or ends.
// The rules read tokens (sandbox/cuda_tokens.h), so comments, line splices, digraphs and string
// literals change nothing. Macros used at namespace scope may not expand to '{', '}' or ';'.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kopt {

// OK, or "origin:line: <rule>" for the first violation. `defined_outside` are the names the
// compile passes as -DNAME=VALUE (the plan's tunables); they may be tested by #if/#ifdef.
Status check_device_code_only(std::string_view source, const std::string& origin,
                              const std::set<std::string>& defined_outside);

}  // namespace kopt
