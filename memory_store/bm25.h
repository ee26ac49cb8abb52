// BM25 over a small set of candidate documents, computed here rather than by FTS5: FTS5 ranks
// every document that matches any query word, and the identifiers of CUDA kernels are shared
// by most pairs, so ranking in SQLite cost 0.4 s for 20,000 pairs. Retrieval picks a bounded
// candidate set with cheap indexed reads and ranks it with this.
#pragma once

#include <string>
#include <vector>

namespace kopt::memory {

// Okapi BM25 (k1 = 1.2, b = 0.75) of each document for the distinct `query_terms` (lower case),
// tokenizing the documents as pair_fts does (unicode61 with '_' a token character: runs of
// letters, digits, '_' and non-ASCII bytes, lower-cased), with document frequencies and average
// length taken over `documents` themselves. A document that contains no query term scores 0.
// With `coverage`, also each document's share of the distinct query terms (0..1): an absolute
// measure, unlike BM25 over a candidate set, which gives the best of poor matches a high score.
std::vector<double> bm25_scores(const std::vector<std::string>& query_terms,
                                const std::vector<std::string>& documents,
                                std::vector<double>* coverage = nullptr);

}  // namespace kopt::memory
