// JSON from outside (a model's answer, an endpoint's body, an imported line, a stored row) parsed
// and written without letting it decide how deep kopt recurses or whether kopt throws.
// nlohmann's parser itself is iterative, but copying, comparing and dumping a value recurse once
// per level: a `[[[...]]]` 100,000 deep parses fine and then overflows the stack. So depth is
// checked by a linear pre-scan before anything is built; and dumping replaces invalid UTF-8
// instead of throwing.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kopt {

// Deeper than any document kopt reads (a launch plan is 4 levels, a task spec 6) and far below
// what the recursive parts of nlohmann::json can take on an 8 MiB (or a worker's 1 MiB) stack.
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of [ and { outside JSON strings in `text`, counting stops once it passes
// `limit` (one pass, no allocation).
size_t json_nesting_depth(std::string_view text, size_t limit = kMaxJsonDepth);

// `text` parsed, or a discarded value (is_discarded()) when it is not JSON or nests deeper than
// `max_depth`: the drop-in for json::parse(text, nullptr, false) on text kopt did not write.
nlohmann::json parse_json_bounded(std::string_view text, size_t max_depth = kMaxJsonDepth);

// value.dump(indent) that never throws: invalid UTF-8 in a string becomes U+FFFD.
std::string dump_json(const nlohmann::json& value, int indent = -1);

// dump_json for output a terminal may show (a command's --json): every non-ASCII character
// escaped as \uXXXX, so that no control or bidi character of stored text reaches the screen.
std::string dump_json_ascii(const nlohmann::json& value, int indent = -1);

}  // namespace kopt
