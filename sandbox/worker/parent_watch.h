// A worker must never outlive whoever started it: a daemon killed with SIGKILL cannot ask, and a
// worker stuck in a hung kernel would keep the GPU busy for everyone after it. The daemon is the
// only writer of the worker's stdin, so that pipe closing means the daemon is gone (or shutting
// down). This also holds through `srun` or `ssh`, which close the remote stdin when theirs closes,
// where a parent-death signal would only see the local step daemon.
#pragma once

namespace kopt::worker {

// Starts a thread that waits for the writer end of stdin to close (POLLHUP, without reading),
// then gives the main thread `grace_seconds` to leave on its own (it reads EOF when idle) and
// ends the process with _exit otherwise. The driver stops any kernel still running.
void exit_when_stdin_closes(double grace_seconds);

}  // namespace kopt::worker
