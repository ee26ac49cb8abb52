// The words of a kernel's source that say what it does (intrinsics, types, variable and kernel
// names), for full-text retrieval: keywords and names every CUDA kernel uses are left out, so
// that BM25 weighs what distinguishes one kernel from another.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kopt::memory {

// The distinct identifiers of `source` worth indexing, sorted, each followed by its
// underscore-separated parts ("__shfl_xor_sync" also gives "shfl", "xor", "sync") so a search
// for a part finds the whole.
std::vector<std::string> index_terms(std::string_view source);

// The distinct lower-case words of free text (summaries, tags, queries): runs of letters, digits
// and '_', at most `limit` of them, in order of first appearance.
std::vector<std::string> text_words(std::string_view text, size_t limit = 64);

// An FTS5 query matching any of `words` (each quoted, joined by OR); "" for no words.
std::string fts_any_of(const std::vector<std::string>& words);
// An FTS5 query matching all of `words` (each quoted); "" for no words.
std::string fts_all_of(const std::vector<std::string>& words);

}  // namespace kopt::memory
