#include "sandbox/worker/parent_watch.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

namespace kopt::worker {

void exit_when_stdin_closes(double grace_seconds) {
  std::thread([grace_seconds] {
    while (true) {
      // No events asked for: poll reports only POLLHUP/POLLERR/POLLNVAL, so pending request
      // bytes (which the main thread reads) never wake this thread.
      pollfd fd{STDIN_FILENO, 0, 0};
      int rc = ::poll(&fd, 1, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (fd.revents & (POLLHUP | POLLERR | POLLNVAL))) break;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_seconds));
    std::fprintf(stderr, "kopt-sandbox: stdin closed and the worker is still busy: exiting\n");
    ::_exit(5);
  }).detach();
}

}  // namespace kopt::worker
