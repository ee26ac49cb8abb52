#include "src/orchestrator/beam.h"

#include <algorithm>
#include <cctype>

namespace kopt::orchestrator {

namespace {

// The code's tokens: words (identifiers, keywords, numbers) and single punctuation characters.
// Comments go first, and with them the kopt:plan block, so that a kernel that differs only in
// its tunables' defaults counts as the same code.
std::map<std::string, int> token_counts(const std::string& source) {
  std::map<std::string, int> counts;
  size_t i = 0;
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  while (i < source.size()) {
    char c = source[i];
    if (source.compare(i, 2, "//") == 0) {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (source.compare(i, 2, "/*") == 0) {
      size_t end = source.find("*/", i + 2);
      if (end == std::string::npos) break;
      i = end + 2;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (word_char(c)) {
      size_t start = i;
      while (i < source.size() && word_char(source[i])) ++i;
      ++counts[source.substr(start, i - start)];
    } else {
      ++counts[std::string(1, c)];
      ++i;
    }
  }
  return counts;
}

}  // namespace

double code_similarity(const std::string& a, const std::string& b) {
  auto ta = token_counts(a);
  auto tb = token_counts(b);
  long shared = 0, total = 0;
  for (const auto& [token, count] : ta) {
    auto it = tb.find(token);
    int other = it == tb.end() ? 0 : it->second;
    shared += std::min(count, other);
    total += std::max(count, other);
  }
  for (const auto& [token, count] : tb) {
    if (!ta.count(token)) total += count;
  }
  return total == 0 ? 1.0 : static_cast<double>(shared) / static_cast<double>(total);
}

bool Beam::contains(int64_t kernel_id) const {
  return std::any_of(members_.begin(), members_.end(),
                     [&](const VerifiedKernel& k) { return k.kernel_id == kernel_id; });
}

bool Beam::offer(const VerifiedKernel& kernel) {
  if (contains(kernel.kernel_id)) return false;
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (code_similarity(it->source, kernel.source) < near_copy_) continue;
    if (it->speedup >= kernel.speedup) return false;  // a faster near-copy holds the slot
    members_.erase(it);
    break;
  }
  auto position = std::find_if(members_.begin(), members_.end(), [&](const VerifiedKernel& k) {
    return k.speedup < kernel.speedup;
  });
  if (position == members_.end() && static_cast<int>(members_.size()) >= width_) return false;
  members_.insert(position, kernel);
  if (static_cast<int>(members_.size()) > width_) members_.pop_back();
  return true;
}

std::vector<int64_t> Beam::remove_if(const std::function<bool(const VerifiedKernel&)>& drop) {
  std::vector<int64_t> removed;
  for (auto it = members_.begin(); it != members_.end();) {
    if (drop(*it)) {
      removed.push_back(it->kernel_id);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

}  // namespace kopt::orchestrator
