// The log sink's filter: every message spdlog formats passes scrub_secrets() (common/
// scrub_secrets.h) and terminal_text() (common/text_escape.h) before its pattern is applied, so
// no key reaches a log file or the console and no model text moves the cursor or forges a line.
#pragma once

#include <spdlog/formatter.h>

#include <memory>
#include <string>

namespace kopt {

// A formatter with spdlog's `pattern` whose message is scrubbed and escaped first.
std::unique_ptr<spdlog::formatter> scrubbing_formatter(const std::string& pattern);

// Puts the scrubbing formatter, with spdlog's default pattern, on the default logger's sinks.
void scrub_default_logger();

}  // namespace kopt
