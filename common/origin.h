// Who wrote a kernel, as the memory stores it (kernels.origin_agent) and the report prints it.
// The daemon writes only these; an import naming anything else is refused at the edge.
#pragma once

#include <optional>
#include <string>

namespace kopt {

enum class Origin {
  kUnknown,   // stored as '': an import that named no agent
  kBaseline,  // the task's own kernel (or a tuned variant of it, which also has tuner set)
  kCoder,     // the coder agent's answer
  kTuner,     // the built-in tuner's configuration of an earlier kernel
};

std::string origin_name(Origin origin);
std::optional<Origin> parse_origin(const std::string& name);

}  // namespace kopt
