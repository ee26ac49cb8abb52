// Getting what an agent asked for out of a model's reply: a fenced code block or a JSON value.
// Models wrap answers in prose, write several blocks, tag them oddly or not at all, and forget
// the closing fence when the token limit strikes; none of that may crash or fool the caller.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kopt {

struct CodeBlock {
  std::string language;  // the fence's tag, lower case; "" when untagged
  std::string code;      // the lines between the fences
  bool closed = true;    // false when the text ended before a closing fence
};

// Every fenced block (``` or ~~~, three or more) in order of appearance.
std::vector<CodeBlock> find_code_blocks(std::string_view text);

// The code block the model was asked for: the longest block tagged `language` (case-insensitive;
// cuda also matches cu, cuh, c++ and cpp), else the longest untagged block. An error when no
// block fits. `language` "" accepts any block.
Result<std::string> extract_code_block(std::string_view text, std::string_view language);

// The first JSON object or array in the reply: the whole text, else a ```json (or untagged)
// block, else the first balanced {...} or [...] in the prose that parses.
Result<nlohmann::json> extract_json(std::string_view text);

}  // namespace kopt
