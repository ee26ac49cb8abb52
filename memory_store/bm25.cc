#include "memory_store/bm25.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace kopt::memory {

namespace {

// What unicode61 (with '_' a token character) does to each byte: 0 separates tokens, anything
// else is the byte lower-cased. A table, because tokenizing the candidates is most of the time
// retrieval spends outside SQLite.
struct TokenTable {
  char lower[256];
  TokenTable() {
    for (int c = 0; c < 256; ++c) {
      bool token = std::isalnum(c) || c == '_' || c >= 0x80;
      lower[c] = token ? static_cast<char>(c >= 0x80 ? c : std::tolower(c)) : '\0';
    }
  }
};
const TokenTable kTokens;

bool is_token_char(unsigned char c) { return kTokens.lower[c] != '\0'; }

// Finds a std::string key by std::string_view without building a string per token.
struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

std::vector<double> bm25_scores(const std::vector<std::string>& query_terms,
                                const std::vector<std::string>& documents,
                                std::vector<double>* coverage) {
  constexpr double kK1 = 1.2, kB = 0.75;
  std::vector<double> scores(documents.size(), 0.0);
  if (coverage) coverage->assign(documents.size(), 0.0);
  if (documents.empty() || query_terms.empty()) return scores;
  std::unordered_map<std::string, size_t, TransparentHash, std::equal_to<>> term_index;
  for (const auto& term : query_terms) term_index.emplace(term, term_index.size());

  // Term frequencies of the query terms only, and lengths, per document.
  const size_t terms = term_index.size();
  std::vector<int> tf(documents.size() * terms, 0);
  std::vector<int> df(terms, 0);
  std::vector<double> length(documents.size(), 0.0);
  size_t longest_term = 0;
  for (const auto& term : query_terms) longest_term = std::max(longest_term, term.size());
  std::string token(longest_term + 1, '\0');  // a longer token cannot be a query term
  for (size_t d = 0; d < documents.size(); ++d) {
    const std::string& text = documents[d];
    for (size_t i = 0; i < text.size();) {
      if (!is_token_char(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      size_t n = 0;
      for (; i < text.size(); ++i) {
        char lower = kTokens.lower[static_cast<unsigned char>(text[i])];
        if (lower == '\0') break;
        if (n < token.size()) token[n] = lower;
        ++n;
      }
      length[d] += 1;
      if (n > longest_term) continue;
      auto it = term_index.find(std::string_view(token.data(), n));
      if (it != term_index.end() && tf[d * terms + it->second]++ == 0) ++df[it->second];
    }
  }
  const double n = static_cast<double>(documents.size());
  double total_length = 0;
  for (double l : length) total_length += l;
  const double average_length = std::max(1.0, total_length / n);
  for (size_t d = 0; d < documents.size(); ++d) {
    double length_norm = kK1 * (1 - kB + kB * length[d] / average_length);
    for (size_t t = 0; t < terms; ++t) {
      int f = tf[d * terms + t];
      if (f == 0) continue;
      if (coverage) (*coverage)[d] += 1.0 / static_cast<double>(terms);
      double idf = std::log(1 + (n - df[t] + 0.5) / (df[t] + 0.5));
      scores[d] += idf * f * (kK1 + 1) / (f + length_norm);
    }
  }
  return scores;
}

}  // namespace kopt::memory
