#include "common/scrub_secrets.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

extern char** environ;

namespace kopt {

namespace {

// A run of this many key characters in a row counts as the key showing: servers and proxies
// echo prefixes ("sk-proj-abc...") as often as whole keys.
constexpr size_t kRevealingRun = 12;
constexpr size_t kShortestSecret = 8;
// Matching across separators joins letters from neighbouring words: only keys this long (random
// strings, in practice) are matched that way, so prose never matches by chance.
constexpr size_t kShortestSplitSecret = 16;

std::mutex& secrets_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& registered() {
  static std::vector<std::string> values;
  return values;
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

enum class Charset { kToken, kUpperDigits, kValue };
bool in_charset(char c, Charset set) {
  switch (set) {
    case Charset::kToken:
      return is_alnum(c) || c == '_' || c == '-';
    case Charset::kUpperDigits:
      return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    case Charset::kValue:
      return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' ||
             c == '=';
  }
  return false;
}

size_t run_length(std::string_view text, size_t from, Charset set) {
  size_t j = from;
  while (j < text.size() && in_charset(text[j], set)) ++j;
  return j - from;
}

// Tokens recognisable by their prefix alone.
struct Shape {
  std::string_view prefix;
  Charset charset;
  size_t min_length;  // characters after the prefix
};
constexpr Shape kShapes[] = {
    {"sk-", Charset::kToken, 16},         {"ghp_", Charset::kToken, 20},
    {"gho_", Charset::kToken, 20},        {"ghu_", Charset::kToken, 20},
    {"ghs_", Charset::kToken, 20},        {"ghr_", Charset::kToken, 20},
    {"github_pat_", Charset::kToken, 20}, {"AKIA", Charset::kUpperDigits, 16},
    {"ASIA", Charset::kUpperDigits, 16},  {"AIza", Charset::kToken, 30},
    {"xoxb-", Charset::kToken, 10},       {"xoxp-", Charset::kToken, 10},
    {"xoxa-", Charset::kToken, 10},       {"xoxs-", Charset::kToken, 10},
};

// Names whose value follows a ':' or '='; longest first so "api_key" wins over "key".
constexpr std::string_view kValueNames[] = {
    "authorization", "x-api-key", "access_token", "auth_token", "api_key", "api-key", "password",
    "apikey",        "passwd",    "secret",       "token",      "key",     "bearer"};

bool starts_with_nocase(std::string_view text, size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (size_t k = 0; k < word.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(text[at + k])) != word[k]) return false;
  return true;
}

// When a secret value follows `name` at `at`: where the value starts (the name, quotes, sign
// and an auth scheme are kept, so a reader still sees what was removed) and its length.
bool value_after_name(std::string_view text, size_t at, std::string_view name, size_t* value_at,
                      size_t* length) {
  size_t j = at + name.size();
  if (j < text.size() && (is_alnum(text[j]) || text[j] == '_')) return false;
  while (j < text.size() && (text[j] == '"' || text[j] == '\'')) ++j;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  bool bearer = name == "bearer";
  if (!bearer) {
    if (j >= text.size() || (text[j] != '=' && text[j] != ':')) return false;
    ++j;
    while (j < text.size() &&
           (text[j] == ' ' || text[j] == '\t' || text[j] == '"' || text[j] == '\''))
      ++j;
    for (std::string_view scheme : {"bearer", "basic", "token"}) {
      if (starts_with_nocase(text, j, scheme) && j + scheme.size() < text.size() &&
          text[j + scheme.size()] == ' ') {
        j += scheme.size();
        while (j < text.size() && text[j] == ' ') ++j;
        break;
      }
    }
  } else if (j == at + name.size()) {
    return false;  // "Bearer" needs a space before its token
  }
  size_t n = run_length(text, j, Charset::kValue);
  if (n < kShortestSecret) return false;
  *value_at = j;
  *length = n;
  return true;
}

std::string scrub_key_shapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    bool boundary = i == 0 || !(is_alnum(text[i - 1]) || text[i - 1] == '_');
    bool replaced = false;
    if (boundary) {
      for (const auto& shape : kShapes) {
        if (text.compare(i, shape.prefix.size(), shape.prefix) != 0) continue;
        size_t n = run_length(text, i + shape.prefix.size(), shape.charset);
        if (n < shape.min_length) continue;
        out += kRedacted;
        i += shape.prefix.size() + n;
        replaced = true;
        break;
      }
      for (size_t k = 0; !replaced && k < std::size(kValueNames); ++k) {
        if (!starts_with_nocase(text, i, kValueNames[k])) continue;
        size_t value_at = 0;
        size_t length = 0;
        if (!value_after_name(text, i, kValueNames[k], &value_at, &length)) continue;
        out.append(text.substr(i, value_at - i));
        out += kRedacted;
        i = value_at + length;
        replaced = true;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace

void register_secret(std::string_view value) {
  if (value.size() < kShortestSecret) return;
  std::lock_guard<std::mutex> lock(secrets_mutex());
  auto& values = registered();
  if (std::find(values.begin(), values.end(), value) == values.end()) values.emplace_back(value);
}

std::string scrub_secret_value(std::string_view text, std::string_view value) {
  if (value.empty()) return std::string(text);
  const size_t window = std::min(value.size(), kRevealingRun);
  std::unordered_set<std::string_view> pieces;
  for (size_t k = 0; k + window <= value.size(); ++k) pieces.insert(value.substr(k, window));
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (i + window <= text.size() && pieces.count(text.substr(i, window))) {
      size_t end = i + window;
      while (end < text.size() && pieces.count(text.substr(end + 1 - window, window))) ++end;
      out += kRedacted;
      i = end;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string scrub_split_secret_value(std::string_view text, std::string_view value) {
  // Letters and digits only, on both sides: the key spelled with spaces, commas, quotes or
  // newlines between its characters ('s','k','-',... in a template argument list, a key
  // wrapped across lines) is the same run here.
  std::string compact_value;
  for (char c : value)
    if (is_alnum(c)) compact_value += c;
  if (compact_value.size() < kShortestSplitSecret) return std::string(text);
  const size_t window = std::min(compact_value.size(), kRevealingRun);
  std::unordered_set<std::string_view> pieces;
  for (size_t k = 0; k + window <= compact_value.size(); ++k)
    pieces.insert(std::string_view(compact_value).substr(k, window));
  std::string compact;
  std::vector<size_t> where;  // compact[i] is text[where[i]]
  for (size_t i = 0; i < text.size(); ++i) {
    if (!is_alnum(text[i])) continue;
    compact += text[i];
    where.push_back(i);
  }
  // Ranges of `text` (first, one past last) to redact, in order.
  std::vector<std::pair<size_t, size_t>> ranges;
  std::string_view view(compact);
  for (size_t i = 0; i + window <= view.size();) {
    if (!pieces.count(view.substr(i, window))) {
      ++i;
      continue;
    }
    size_t end = i + window;
    while (end < view.size() && pieces.count(view.substr(end + 1 - window, window))) ++end;
    ranges.emplace_back(where[i], where[end - 1] + 1);
    i = end;
  }
  if (ranges.empty()) return std::string(text);
  std::string out;
  size_t at = 0;
  for (const auto& [first, last] : ranges) {
    out.append(text.substr(at, first - at));
    out += kRedacted;
    at = last;
  }
  out.append(text.substr(at));
  return out;
}

bool is_secret_variable_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

void register_environment_secrets() {
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals == std::string_view::npos || !is_secret_variable_name(text.substr(0, equals)))
      continue;
    register_secret(text.substr(equals + 1));
  }
}

std::string scrub_registered_secrets(std::string_view text) {
  std::vector<std::string> values;
  {
    std::lock_guard<std::mutex> lock(secrets_mutex());
    values = registered();
  }
  std::string out(text);
  for (const auto& value : values) {
    out = scrub_secret_value(out, value);
    out = scrub_split_secret_value(out, value);
  }
  return out;
}

std::string scrub_secrets(std::string_view text) {
  return scrub_key_shapes(scrub_registered_secrets(text));
}

}  // namespace kopt
