// A linear CUDA C++ tokenizer for the gate's rules (sandbox/device_code_rules.h). It performs the
// translation phases a compiler performs before it reads a token, so no spelling hides a token
// from the rules: line splices (backslash-newline) are joined, comments become whitespace, string,
// character and raw-string literals are single tokens, and digraphs become the token they spell
// (%: is #, <% is {). Trigraphs are refused outright: some host compilers still honour them.
// One pass, no regex, no recursion: any input costs time and memory linear in its size.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kopt {

struct CudaToken {
  enum class Kind { kIdentifier, kNumber, kString, kChar, kPunct, kOther };
  Kind kind = Kind::kOther;
  std::string text;           // punctuators normalised: digraphs become their token
  int line = 0;               // physical line of the token's first character
  bool starts_line = false;   // first token of a logical line (a '#' here opens a directive)
  bool space_before = false;  // whitespace or a comment precedes it (#define F(x) vs F (x))
};

// The tokens of `source`; an error names origin:line (unterminated comment or literal, trigraph).
Result<std::vector<CudaToken>> tokenize_cuda(std::string_view source, const std::string& origin);

}  // namespace kopt
