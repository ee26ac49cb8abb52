#include "common/log_scrubbing.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "common/scrub_secrets.h"
#include "common/text_escape.h"

namespace kopt {

namespace {

class ScrubbingFormatter final : public spdlog::formatter {
 public:
  explicit ScrubbingFormatter(std::string pattern)
      : pattern_(std::move(pattern)),
        inner_(std::make_unique<spdlog::pattern_formatter>(pattern_)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string text =
        terminal_text(scrub_secrets(std::string_view(msg.payload.data(), msg.payload.size())));
    spdlog::details::log_msg scrubbed = msg;
    scrubbed.payload = spdlog::string_view_t(text.data(), text.size());
    inner_->format(scrubbed, dest);
    // Colour sinks read the level's colour range from the message they passed in.
    msg.color_range_start = scrubbed.color_range_start;
    msg.color_range_end = scrubbed.color_range_end;
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<ScrubbingFormatter>(pattern_);
  }

 private:
  std::string pattern_;
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> scrubbing_formatter(const std::string& pattern) {
  return std::make_unique<ScrubbingFormatter>(pattern);
}

void scrub_default_logger() { spdlog::set_formatter(scrubbing_formatter("%+")); }

}  // namespace kopt
