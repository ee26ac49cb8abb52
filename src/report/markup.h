// Text helpers for the report writers: number and time formats. Model text is escaped with
// common/text_escape.h (html_text, markdown_text), included here for every writer.
#pragma once

#include <string>
#include <string_view>

#include "common/text_escape.h"

namespace kopt::report {

// `value` with `digits` decimals ("3.14").
std::string fixed(double value, int digits);

// A time in microseconds as "812 us", "1.25 ms" or "2.10 s".
std::string format_micros(double us);

// A speedup as "2.31x".
std::string format_speedup(double speedup);

// The first line of `text`, cut to at most `max_chars` characters with "..." when longer.
std::string first_line(std::string_view text, size_t max_chars);

// Seconds since the Unix epoch of an ISO-8601 UTC time ("2026-11-22T03:14:07Z"; a missing
// "Z" or a fractional second is accepted); -1 when it does not parse.
double parse_utc_seconds(std::string_view iso);

}  // namespace kopt::report
