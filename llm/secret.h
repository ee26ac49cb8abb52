// An API key read from the environment. It goes into request headers and nowhere else: it has
// no printing operators, and every text leaving the client passes through scrub() first.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace kopt {

class Secret {
 public:
  Secret() = default;

  // The value of environment variable `name`; an error (naming the variable, not the value)
  // when it is unset or empty.
  static Result<Secret> from_env(const std::string& name);
  // For tests and for providers that take the key another way.
  static Secret of(std::string value);

  bool empty() const { return value_.empty(); }
  // Only for building request headers.
  const std::string& reveal() const { return value_; }

  // `text` with every occurrence of the key replaced by "[redacted]". Servers echo keys in
  // error bodies ("Incorrect API key provided: ..."), so this runs on everything reported.
  std::string scrub(std::string_view text) const;

 private:
  std::string value_;
};

}  // namespace kopt
