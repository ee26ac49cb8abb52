#include "memory_store/source_identifiers.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_set>

#include "common/strings.h"

namespace kopt::memory {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Hands each run of word characters of `text` to `on_word`, in order, while it returns true.
template <typename OnWord>
void for_each_word(std::string_view text, OnWord on_word) {
  size_t i = 0;
  while (i < text.size()) {
    if (!is_word_char(text[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    if (!on_word(std::string(text.substr(start, i - start)))) return;
  }
}

// Words every kernel file has: C++ keywords, plain types, the thread-index built-ins and the
// keys of a kopt:plan. Matching on them says nothing about what a kernel does.
const std::unordered_set<std::string>& stop_words() {
  static const std::unordered_set<std::string> words = {
      "auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default",
      "do", "double", "else", "enum", "extern", "false", "float", "for", "if", "inline", "int",
      "long", "namespace", "nullptr", "return", "short", "signed", "sizeof", "static", "struct",
      "switch", "template", "true", "typename", "unsigned", "using", "void", "volatile", "while",
      "__global__", "__device__", "__forceinline__", "__restrict__", "threadIdx", "blockIdx",
      "blockDim", "gridDim", "include", "define", "pragma", "kopt", "plan", "launches", "kernel",
      "grid", "block", "args", "tunables", "shared_bytes", "scratch", "count", "zero", "name",
      "dtype", "compile_options", "the", "and", "with", "one", "per"};
  return words;
}

}  // namespace

std::vector<std::string> index_terms(std::string_view source) {
  std::set<std::string> terms;
  for_each_word(source, [&](const std::string& word) {
    // Numbers, single letters and boilerplate carry no meaning for retrieval.
    if (std::isdigit(static_cast<unsigned char>(word[0])) || word.size() < 3) return true;
    if (stop_words().count(word)) return true;
    terms.insert(word);
    if (word.find('_') == std::string::npos) return true;
    for (const auto& part : split(word, '_')) {
      if (part.size() >= 2 && !std::isdigit(static_cast<unsigned char>(part[0])) &&
          !stop_words().count(part)) {
        terms.insert(part);
      }
    }
    return true;
  });
  return {terms.begin(), terms.end()};
}

std::vector<std::string> text_words(std::string_view text, size_t limit) {
  std::vector<std::string> words;
  std::unordered_set<std::string> seen;
  if (limit == 0) return words;
  for_each_word(text, [&](std::string word) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (seen.insert(word).second) words.push_back(word);
    return words.size() < limit;
  });
  return words;
}

namespace {

// Words only hold [A-Za-z0-9_], so quoting cannot be escaped out of; quotes are doubled anyway.
std::string quoted(const std::string& word) {
  std::string out = "\"";
  for (char c : word) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

std::string fts_join(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const auto& word : words) {
    if (word.empty()) continue;
    if (!out.empty()) out += separator;
    out += quoted(word);
  }
  return out;
}

}  // namespace

std::string fts_any_of(const std::vector<std::string>& words) { return fts_join(words, " OR "); }

std::string fts_all_of(const std::vector<std::string>& words) { return fts_join(words, " "); }

}  // namespace kopt::memory
