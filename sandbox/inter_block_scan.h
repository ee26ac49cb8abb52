// Whether a kernel's source shows communication between thread blocks: atomics on global memory,
// volatile accesses, __threadfence, cuda::atomic, acquire/release PTX, cache-bypassing loads and
// stores, a cooperative groups grid. Such a kernel can be wrong under the CUDA memory model (a
// split-K "last block combines" without its fence, a chained scan whose flag is stored before its
// data) yet right on every run of an idle GPU, and no tool detects races in global memory: with
// the option `corun` the verification plan gives it rounds beside a co-running kernel instead
// (sandbox/worker/co_runner.h), which changes where and when its blocks run (off by default: on
// an H200 they killed no mutant the other rounds missed, protocol.h). A heuristic on tokens,
// not a proof: a kernel that hides its communication is judged like any other, and a false sign
// costs a few rounds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kopt {

struct InterBlockSign {
  std::string what;  // "__threadfence", "atomicAdd", "volatile", "asm ld.acquire"
  int line = 0;
};

// At most this many signs are returned: the first is enough to decide, a few say why.
inline constexpr size_t kMaxInterBlockSigns = 4;

// The signs of inter-block communication in `source`, in source order (comments and string
// literals other than inline assembly never count). Atomics and volatile accesses on names
// declared __shared__ (or pointers initialised from them) and block-scoped atomics
// (atomicAdd_block) are communication within a block and do not count. A source the tokenizer
// refuses counts as communicating (line 0).
std::vector<InterBlockSign> inter_block_signs(std::string_view source);

// "__threadfence (line 36), atomicAdd (line 40)": the signs for a plan's note.
std::string describe_inter_block_signs(const std::vector<InterBlockSign>& signs);

}  // namespace kopt
