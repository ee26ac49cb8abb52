// A line diff (Myers' O(ND) algorithm) printed as a unified diff, for `kopt memory show`: what
// changed between the slow and the fast kernel of a pair.
#pragma once

#include <string>
#include <vector>

namespace kopt::memory {

struct DiffOp {
  enum class Kind { kEqual, kDelete, kInsert } kind = Kind::kEqual;
  size_t before_line = 0;  // 0-based index into the old lines (kEqual, kDelete)
  size_t after_line = 0;   // 0-based index into the new lines (kEqual, kInsert)
};

// The shortest edit script turning `before` into `after`, in order.
std::vector<DiffOp> diff_lines(const std::vector<std::string>& before,
                               const std::vector<std::string>& after);

// `text` split into lines without their '\n' (a final newline adds no empty line).
std::vector<std::string> split_lines(const std::string& text);

// A unified diff ("--- before_name", "+++ after_name", "@@ -a,b +c,d @@" hunks with `context`
// lines around each change), "" when the texts are equal.
std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& before_name, const std::string& after_name,
                         int context = 3);

}  // namespace kopt::memory
