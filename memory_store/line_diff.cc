#include "memory_store/line_diff.h"

#include <algorithm>

namespace kopt::memory {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

namespace {

// Past this many edits a minimal script is not worth its cost: Myers keeps one row of O(d)
// entries per edit, so d edits cost O(d^2) time and memory (a hostile answer of 100,000 short
// lines once made the old copy-the-whole-row version run for minutes). Beyond it the changed
// middle is shown as deleted and inserted whole, which is still a correct diff.
constexpr long kMaxEdits = 2000;

// Myers' shortest edit script of a[a0, a1) into b[b0, b1), appended to `ops` in order; false
// (and `ops` untouched) when it needs more than kMaxEdits edits.
bool myers(const std::vector<std::string>& a, long a0, long a1, const std::vector<std::string>& b,
           long b0, long b1, std::vector<DiffOp>& ops) {
  // v[k] is the furthest x reached on diagonal k = x - y; the part of v that round d read
  // (diagonals -d-1 .. d+1) is kept so the path can be walked back from (n, m).
  const long n = a1 - a0, m = b1 - b0;
  const long max_d = std::min(n + m, kMaxEdits);
  const long offset = max_d + 2;
  std::vector<long> v(2 * offset + 1, 0);
  std::vector<std::vector<long>> trace;
  bool done = n == 0 && m == 0;
  for (long d = 0; d <= max_d && !done; ++d) {
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                   ? v[offset + k + 1]       // down: insert b[y]
                   : v[offset + k - 1] + 1;  // right: delete a[x]
      long y = x - k;
      while (x < n && y < m && a[a0 + x] == b[b0 + y]) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        done = true;
        break;
      }
    }
  }
  if (!done) return false;
  std::vector<DiffOp> reversed;
  long x = n, y = m;
  for (long d = static_cast<long>(trace.size()) - 1; d >= 0; --d) {
    const auto& row = trace[d];  // row[i] is diagonal i - d - 1 before round d
    auto prev = [&](long k) { return row[k + d + 1]; };
    long k = x - y;
    long prev_k = (k == -d || (k != d && prev(k - 1) < prev(k + 1))) ? k + 1 : k - 1;
    long prev_x = prev(prev_k);
    long prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x, --y;
      reversed.push_back(
          {DiffOp::Kind::kEqual, static_cast<size_t>(a0 + x), static_cast<size_t>(b0 + y)});
    }
    if (d > 0) {
      if (x == prev_x) {
        reversed.push_back(
            {DiffOp::Kind::kInsert, static_cast<size_t>(a0 + x), static_cast<size_t>(b0 + y - 1)});
      } else {
        reversed.push_back(
            {DiffOp::Kind::kDelete, static_cast<size_t>(a0 + x - 1), static_cast<size_t>(b0 + y)});
      }
    }
    x = prev_x;
    y = prev_y;
  }
  ops.insert(ops.end(), reversed.rbegin(), reversed.rend());
  return true;
}

}  // namespace

std::vector<DiffOp> diff_lines(const std::vector<std::string>& a,
                               const std::vector<std::string>& b) {
  // The common start and end first (linear): most edits of a kernel are local.
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  std::vector<DiffOp> ops;
  for (size_t i = 0; i < prefix; ++i) ops.push_back({DiffOp::Kind::kEqual, i, i});
  const size_t a_end = a.size() - suffix, b_end = b.size() - suffix;
  if (!myers(a, static_cast<long>(prefix), static_cast<long>(a_end), b, static_cast<long>(prefix),
             static_cast<long>(b_end), ops)) {
    for (size_t i = prefix; i < a_end; ++i) ops.push_back({DiffOp::Kind::kDelete, i, prefix});
    for (size_t j = prefix; j < b_end; ++j) ops.push_back({DiffOp::Kind::kInsert, a_end, j});
  }
  for (size_t i = 0; i < suffix; ++i) ops.push_back({DiffOp::Kind::kEqual, a_end + i, b_end + i});
  return ops;
}

namespace {

// "a,b" of a hunk header; an empty range names the line before it, as diff -u does.
std::string range(size_t first, size_t count) {
  return std::to_string(count == 0 ? first : first + 1) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& before_name, const std::string& after_name,
                         int context) {
  auto a = split_lines(before), b = split_lines(after);
  auto ops = diff_lines(a, b);
  std::vector<size_t> changes;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != DiffOp::Kind::kEqual) changes.push_back(i);
  }
  if (changes.empty()) return "";
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  std::string out = "--- " + before_name + "\n+++ " + after_name + "\n";
  size_t c = 0;
  while (c < changes.size()) {
    // A hunk takes every change whose gap of equal lines to the previous one is <= 2 * context.
    size_t last = c;
    while (last + 1 < changes.size() && changes[last + 1] - changes[last] - 1 <= 2 * ctx) ++last;
    size_t begin = changes[c] >= ctx ? changes[c] - ctx : 0;
    size_t end = std::min(ops.size(), changes[last] + ctx + 1);
    // Lines of each side before the hunk: the position of its first op on that side.
    size_t old_first = ops[begin].before_line;
    size_t new_first = ops[begin].after_line;
    size_t old_count = 0, new_count = 0;
    std::string body;
    for (size_t i = begin; i < end; ++i) {
      switch (ops[i].kind) {
        case DiffOp::Kind::kEqual:
          body += " " + a[ops[i].before_line] + "\n";
          ++old_count, ++new_count;
          break;
        case DiffOp::Kind::kDelete:
          body += "-" + a[ops[i].before_line] + "\n";
          ++old_count;
          break;
        case DiffOp::Kind::kInsert:
          body += "+" + b[ops[i].after_line] + "\n";
          ++new_count;
          break;
      }
    }
    out += "@@ -" + range(old_first, old_count) + " +" + range(new_first, new_count) + " @@\n";
    out += body;
    c = last + 1;
  }
  return out;
}

}  // namespace kopt::memory
