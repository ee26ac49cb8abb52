#include "src/orchestrator/live_display.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/text_escape.h"

namespace kopt::orchestrator {

namespace {

size_t terminal_width(std::FILE* file) {
  winsize size{};
  if (::ioctl(::fileno(file), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col - 1;
  return 119;
}

class DisplaySink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit DisplaySink(std::shared_ptr<LiveDisplay> display) : display_(std::move(display)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    std::string line(formatted.data(), formatted.size());
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    display_->print_line(line);
  }
  void flush_() override {}

 private:
  std::shared_ptr<LiveDisplay> display_;
};

}  // namespace

void LiveDisplay::erase_locked() {
  // Cursor up over the block, then clear to the end of the screen.
  if (drawn_ > 0) std::fprintf(out_, "\x1b[%zuF\x1b[J", drawn_);
  drawn_ = 0;
}

void LiveDisplay::draw_locked() {
  // Progress lines carry task names and plan titles: model text never drives the terminal.
  for (const std::string& line : lines_) std::fprintf(out_, "%s\n", terminal_text(line).c_str());
  drawn_ = lines_.size();
  std::fflush(out_);
}

void LiveDisplay::update(const RunProgress& progress) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  lines_ = render_progress(progress, terminal_width(out_));
  erase_locked();
  draw_locked();
}

void LiveDisplay::print_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  if (finished_) {
    std::fprintf(out_, "%s\n", line.c_str());
    return;
  }
  erase_locked();
  std::fprintf(out_, "%s\n", line.c_str());
  draw_locked();
}

void LiveDisplay::finish() {
  std::lock_guard lock(mutex_);
  finished_ = true;
  std::fflush(out_);
}

std::shared_ptr<spdlog::sinks::sink> make_display_sink(std::shared_ptr<LiveDisplay> display) {
  return std::make_shared<DisplaySink>(std::move(display));
}

bool is_interactive_terminal(std::FILE* file) {
  if (!::isatty(::fileno(file))) return false;
  const char* term = std::getenv("TERM");
  return term && *term && std::strcmp(term, "dumb") != 0;
}

}  // namespace kopt::orchestrator
