#include "src/llm/secret.h"

#include <algorithm>
#include <cstdlib>

namespace kopt {

namespace {
// A run of this many key characters in a row counts as the key showing: servers and proxies
// echo prefixes ("sk-proj-abc...") as often as whole keys.
constexpr size_t kRevealingRun = 12;
}  // namespace

Result<Secret> Secret::from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value || !*value) return make_error("environment variable " + name + " is not set");
  return of(value);
}

Secret Secret::of(std::string value) {
  Secret s;
  s.value_ = std::move(value);
  return s;
}

std::string Secret::scrub(std::string_view text) const {
  if (value_.empty()) return std::string(text);
  const size_t threshold = std::min(value_.size(), kRevealingRun);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    // The longest run of key characters starting here.
    size_t longest = 0;
    for (size_t j = 0; j + longest < value_.size(); ++j) {
      size_t m = 0;
      while (i + m < text.size() && j + m < value_.size() && text[i + m] == value_[j + m]) ++m;
      longest = std::max(longest, m);
    }
    if (longest >= threshold) {
      out += "[redacted]";
      i += longest;
    } else {
      out += text[i];
      ++i;
    }
  }
  return out;
}

}  // namespace kopt
