// Captures what spdlog's default logger writes while it lives, for tests that check what is
// (and is not) logged. Restores the previous logger on destruction.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace kopt::testing {

class CaptureSink;

class LogCapture {
 public:
  // Captures every level down to trace.
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Everything logged so far, one formatted line per message.
  std::string text() const;

 private:
  std::shared_ptr<CaptureSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace kopt::testing
