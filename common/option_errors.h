// Command-line errors that name the flag: cxxopts says "Argument 'nan' failed to parse" without
// saying for which flag, and accepts values (negative counts, non-finite numbers) that mean
// nothing for a budget or a limit.
#pragma once

#include <cxxopts.hpp>
#include <string>

#include "common/result.h"

namespace kopt {

// The message of a cxxopts parse error, with the flag named where cxxopts names only the value:
// "--hours: 'nan' is not a number", "--rounds: '1.5' is not a whole number".
std::string describe_option_error(const cxxopts::exceptions::exception& error, int argc,
                                  const char* const* argv);

// `value` of `flag` ("--hours") must be a finite number above `low` (at least `low` with
// `inclusive`); the error names the flag.
Status require_number_above(const std::string& flag, double value, double low, bool inclusive);

}  // namespace kopt
