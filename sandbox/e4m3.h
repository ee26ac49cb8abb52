// The host's reading of an e4m3 byte (OCP FP8 E4M3 "fn", see dtype.h), for an element the worker
// reads back to show in a mismatch. Values are made and compared on the device only, by the
// toolkit's cuda_fp8.h (support_kernels_source.h); tests check this twin against it.
#pragma once

#include <cstdint>

namespace kopt {

// S.EEEE.MMM, bias 7: subnormals below 2^-6, S.1111.111 NaN, no infinities, largest 448.
double e4m3_to_double(uint8_t bits);

}  // namespace kopt
