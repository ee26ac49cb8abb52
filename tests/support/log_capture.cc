#include "tests/support/log_capture.h"

#include <spdlog/sinks/base_sink.h>

#include <mutex>

namespace kopt::testing {

// Owns its text, so a thread still holding the logger after the capture ends writes into a
// live buffer rather than a destroyed stream.
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    text_.append(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

LogCapture::LogCapture()
    : sink_(std::make_shared<CaptureSink>()), previous_(spdlog::default_logger()) {
  auto logger = std::make_shared<spdlog::logger>("capture", sink_);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

LogCapture::~LogCapture() { spdlog::set_default_logger(previous_); }

std::string LogCapture::text() const { return sink_->text(); }

}  // namespace kopt::testing
