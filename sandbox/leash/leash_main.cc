// kopt-leash: runs a worker's launcher (srun, ssh) and ends it when the daemon that started it
// dies, however it dies. A worker that runs ends by itself when its stdin closes
// (sandbox/worker/parent_watch.h), but a launcher still waiting in a scheduler's queue reads no
// stdin: `kill -9` of the daemon would leave its pending job in the queue, to start hours later
// on a GPU nobody uses. The daemon cannot clean up after SIGKILL, so this process does.
//
//   kopt-leash -- COMMAND [ARGS...]
//
// COMMAND inherits stdin, stdout, stderr and the process group. The leash waits (pidfds, no
// polling) for either to end: COMMAND's exit is passed on as the leash's own; the daemon's death
// sends COMMAND SIGTERM (srun revokes a pending job and ends a running step on it), then SIGKILL
// after 10 s. SIGTERM, SIGINT and SIGHUP sent to the leash are forwarded to COMMAND, so the
// daemon ends a launcher gracefully by signalling the leash.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Exits as the child did: the same code, or the same signal.
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::raise(WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int reap(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--") != 0) {
    std::fprintf(stderr, "usage: kopt-leash -- COMMAND [ARGS...]\n");
    return 2;
  }
  const pid_t daemon = ::getppid();
  int daemon_fd = pidfd_open(daemon);
  if (daemon_fd < 0 || ::getppid() != daemon) {
    std::fprintf(stderr, "kopt-leash: cannot watch the daemon (pid %d): %s\n", int(daemon),
                 daemon_fd < 0 ? std::strerror(errno) : "it is gone");
    return 1;
  }
  struct sigaction act {};
  act.sa_handler = forward;
  sigemptyset(&act.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &act, nullptr);

  pid_t child = ::fork();
  if (child < 0) {
    std::perror("kopt-leash: fork");
    return 1;
  }
  if (child == 0) {
    ::close(daemon_fd);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
    ::execvp(argv[2], argv + 2);
    std::fprintf(stderr, "kopt-leash: cannot start '%s': %s\n", argv[2], std::strerror(errno));
    ::_exit(127);
  }
  g_child = child;
  int child_fd = pidfd_open(child);
  if (child_fd < 0) {
    std::perror("kopt-leash: pidfd_open");
    ::kill(child, SIGTERM);
    exit_like(reap(child));
  }

  pollfd fds[2] = {{child_fd, POLLIN, 0}, {daemon_fd, POLLIN, 0}};
  while (true) {
    int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || fds[0].revents) exit_like(reap(child));
    if (fds[1].revents) break;
  }
  std::fprintf(stderr, "kopt-leash: the daemon (pid %d) is gone: ending %s (pid %d)\n", int(daemon),
               argv[2], int(child));
  ::kill(child, SIGTERM);
  pollfd ended{child_fd, POLLIN, 0};
  while (::poll(&ended, 1, 10000) < 0 && errno == EINTR) {
  }
  if (!ended.revents) ::kill(child, SIGKILL);
  exit_like(reap(child));
}
