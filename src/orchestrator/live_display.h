// The live display of `kopt run` on a terminal: one line per task (best speedup, %SOL,
// candidates, failures, tokens, cost) and a total with the time left, redrawn in place. Log lines
// go through print_line(), which scrolls them above the block instead of tearing it.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/sink.h>

#include "src/orchestrator/progress.h"

namespace kopt::orchestrator {

class LiveDisplay {
 public:
  explicit LiveDisplay(std::FILE* terminal) : out_(terminal) {}

  // Redraws the block with `progress`.
  void update(const RunProgress& progress);
  // Prints a log line above the block.
  void print_line(const std::string& line);
  // Leaves the last block on the screen and stops redrawing.
  void finish();

 private:
  void erase_locked();
  void draw_locked();

  std::mutex mutex_;
  std::FILE* out_;
  std::vector<std::string> lines_;
  size_t drawn_ = 0;  // lines of the block now on the screen
  bool finished_ = false;
};

// A spdlog sink that writes through the display.
std::shared_ptr<spdlog::sinks::sink> make_display_sink(std::shared_ptr<LiveDisplay> display);

// Whether `file` is a terminal that understands cursor movement (not TERM=dumb).
bool is_interactive_terminal(std::FILE* file);

}  // namespace kopt::orchestrator
