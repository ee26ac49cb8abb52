// The declaration half of the device-code-only rule (sandbox/device_code_rules.h): walks the
// tokens outside preprocessor directives, splits namespace and class scope into declarations, and
// refuses those that would run on the host. Internal to the gate.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/cuda_tokens.h"

namespace kopt {

// One item of the code a compiler sees: a token, or the place of a conditional directive
// (#if ... #endif), whose branches must not cut a declaration or a brace pair.
struct CodeItem {
  const CudaToken* token = nullptr;  // null for a conditional directive
  int line = 0;
  bool opens_group = false;   // #if, #ifdef, #ifndef
  bool closes_group = false;  // #endif
};

// Every identifier any definition of each file macro may expand to (directly or through other
// file macros), and whether some definition holds '{', '}' or ';'.
struct MacroFacts {
  std::set<std::string> identifiers;
  bool has_separator = false;
};

Status check_declarations(const std::vector<CodeItem>& code, const std::string& origin,
                          const std::map<std::string, MacroFacts>& macros);

}  // namespace kopt
