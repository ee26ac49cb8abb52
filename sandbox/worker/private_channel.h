// The worker's protocol channel, out of a candidate's reach. A kernel's device printf (and anything
// the driver or a library prints) goes to the process's stdout, fd 1; were fd 1 the protocol
// channel, a kernel could print a protocol-shaped line and fake its own verdict. So the first thing
// the worker does is move the channel: the pipe the daemon reads stays the same (through srun or
// ssh too, which forward only stdin, stdout and stderr, so no extra descriptor could be handed
// over), but the worker keeps it on a private, close-on-exec descriptor, and fd 1 becomes a pipe
// that a thread drains into a bounded log. stderr is left to the daemon, which keeps at most 1 MiB
// of it for failure messages.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"

namespace kopt::worker {

// Bytes the output log keeps; past this it starts over with a note, so it holds recent output.
constexpr size_t kOutputLogCap = 1u << 20;

// Moves the protocol channel off fd 1 and returns its new descriptor. From then on fd 1 (and C's
// stdout) writes to `log_path` (opened without following a symlink, truncated, kept under `cap`
// bytes); an empty path, or one that cannot be opened, discards the output.
Result<int> divert_stdout_to_log(const std::string& log_path, size_t cap = kOutputLogCap);

// Writes all of `data` to `fd` (a protocol line). False when the daemon's end is gone.
bool write_line(int fd, const std::string& data);

// The output log's default path for the worker of GPU `ordinal`: one per device and user under
// $TMPDIR (or /tmp), so a new worker reuses its predecessor's file instead of leaving another.
std::string default_output_log_path(int ordinal);

}  // namespace kopt::worker
