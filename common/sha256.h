// SHA-256, used to content-address kernels, compile-cache entries and task specs.
#pragma once

#include <string>
#include <string_view>

namespace kopt {

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace kopt
