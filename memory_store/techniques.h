// The optimization techniques a pair teaches, named from its lesson and the identifiers its
// change added, and the techniques a kernel already uses, named from its source. A keyword
// classifier (no model): each technique is a list of word stems and phrases (techniques.cc);
// its precision is measured against labelled pairs in bench/memory_usefulness.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kopt::memory {

// The labels, in a fixed order: "vector_loads", "warp_shuffle", "online_softmax",
// "shared_tiling", "smem_padding", "cp_async", "tensor_cores", "split_k", "fusion",
// "register_resident", "unrolling", "launch_config", "fast_math", "packed_half".
const std::vector<std::string>& technique_names();

// The techniques `text` mentions (a lesson, a kernel source, added identifiers), in the order
// of technique_names(), each once.
std::vector<std::string> techniques_in(std::string_view text);

// The techniques a pair teaches: those its lesson names, plus those whose identifiers the fast
// kernel has and the slow kernel has not (`slow_terms` and `fast_terms` as pair_fts holds them).
std::vector<std::string> pair_techniques(std::string_view lesson, std::string_view slow_terms,
                                         std::string_view fast_terms);

}  // namespace kopt::memory
