#include "common/option_errors.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kopt {

namespace {

// The text between cxxopts' quotes (‘ ’ in UTF-8, or ' ') in its message.
std::string quoted_value(const std::string& message) {
  for (auto [open, close] : {std::pair<const char*, const char*>{"\u2018", "\u2019"}, {"'", "'"}}) {
    size_t start = message.find(open);
    if (start == std::string::npos) continue;
    start += std::strlen(open);
    size_t end = message.find(close, start);
    if (end != std::string::npos) return message.substr(start, end - start);
  }
  return "";
}

// The flag `value` was given to: "--flag=value", "--flag value" or "-f value".
std::string flag_of(const std::string& value, int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("-", 0) != 0) continue;
    size_t eq = word.find('=');
    if (eq != std::string::npos && word.substr(eq + 1) == value) return word.substr(0, eq);
    if (eq == std::string::npos && i + 1 < argc && value == argv[i + 1]) return word;
  }
  return "";
}

}  // namespace

std::string describe_option_error(const cxxopts::exceptions::exception& error, int argc,
                                  const char* const* argv) {
  std::string message = error.what();
  if (!dynamic_cast<const cxxopts::exceptions::incorrect_argument_type*>(&error)) return message;
  std::string value = quoted_value(message);
  std::string flag = flag_of(value, argc, argv);
  if (flag.empty()) return message;
  // A value that reads as a finite number failed because the flag takes a whole number.
  char* end = nullptr;
  double number = std::strtod(value.c_str(), &end);
  bool is_number = !value.empty() && end && *end == '\0' && std::isfinite(number);
  return flag + ": '" + value + "' is not " + (is_number ? "a whole number" : "a number");
}

Status require_number_above(const std::string& flag, double value, double low, bool inclusive) {
  bool fine = std::isfinite(value) && (inclusive ? value >= low : value > low);
  if (fine) return ok_status();
  char text[96];
  std::snprintf(text, sizeof text, "must be a number %s %g (got %g)",
                inclusive ? "of at least" : "above", low, value);
  return make_error(flag + ": " + text);
}

}  // namespace kopt
