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
// of technique_names(), each once. Word boundaries hold: a stem written with leading
// underscores ("__expf") matches only a token that has them (not "expf"), and a stem ending in
// a digit ("float2") only a token where it ends (not "__float2bfloat16").
std::vector<std::string> techniques_in(std::string_view text);

// The techniques a pair teaches: those its lesson names, plus those whose identifiers the fast
// kernel has and the slow kernel has not (`slow_terms` and `fast_terms` as pair_fts holds them).
std::vector<std::string> pair_techniques(std::string_view lesson, std::string_view slow_terms,
                                         std::string_view fast_terms);

// `source` with its // and /* */ comments blanked out (string literals kept as they are): a
// comment saying "no tensor cores" is not tensor cores.
std::string without_comments(std::string_view source);

// The techniques a kernel's code uses: techniques_in() of its source without comments.
std::vector<std::string> techniques_in_code(std::string_view source);

// The techniques a pair teaches, read from its kernels: those its lesson names, plus those the
// fast kernel's code (comments stripped) adds over the slow kernel's, token by token.
std::vector<std::string> pair_techniques_from_code(std::string_view lesson,
                                                   std::string_view slow_source,
                                                   std::string_view fast_source);

}  // namespace kopt::memory
