// Stands in for a kopt-sandbox worker stuck in a hung kernel: it arms the same stdin watch as the
// real worker, then never reads stdin and never returns. Only the watch can end it.
#include <chrono>
#include <thread>

#include "sandbox/worker/parent_watch.h"

int main() {
  kopt::worker::exit_when_stdin_closes(0.2);
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}
