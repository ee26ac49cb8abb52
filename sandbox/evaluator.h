// The orchestrator's side of GPU evaluation. `Evaluator` is the edge the daemon's tests replace
// with a fake; `SandboxEvaluator` supervises one long-lived `kopt-sandbox` worker process (one
// GPU, one CUDA context) and survives anything a candidate does to it: a hang is killed at the
// request's deadline (verdict timeout), a death is a crash verdict, and the next request gets a
// fresh worker. One bad candidate never costs another candidate's result.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/subprocess.h"
#include "sandbox/protocol.h"
#include "sandbox/sanitizer_report.h"

namespace kopt {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Judges one candidate. Every verdict, timeout and crash included, is a value; an error means
  // no verdict could be reached (the worker cannot start, or refused the request as malformed).
  virtual Result<EvalResult> evaluate(const EvalRequest& request) = 0;
  // What it runs on, for logs: "kopt-sandbox --device 1".
  virtual std::string name() const = 0;
  // Ends at once any wait for a busy GPU to become quiet or for a worker to leave a scheduler's
  // queue (the daemon is stopping).
  virtual void cancel_pauses() {}
  // Workers waiting to start (in a scheduler's queue), one line each, for status and logs:
  // "GPU 1: waiting 3m05s to start (srun: job 12 queued and waiting for resources)".
  virtual std::vector<std::string> waiting() const { return {}; }
  // Runs the candidate of `request` once more under compute-sanitizer's tools on one of this
  // evaluator's GPUs (sandbox/sanitizer_runner.h). One without a GPU of its own runs nothing.
  virtual SanitizerOutcome sanitize(const EvalRequest& /*request*/) {
    return {.note = name() + " cannot run compute-sanitizer"};
  }
};

struct SandboxOptions {
  std::string worker = "kopt-sandbox";      // a path, or a name searched in PATH
  std::vector<std::string> command_prefix;  // e.g. {"srun", "--gres=gpu:1"} or {"ssh", "gpu7"}
  int device = 0;                           // passed as --device N; negative: not passed
  std::vector<std::string> extra_args;      // appended to the worker's arguments
  // "NAME=value" entries added to the worker's allow-listed environment (KOPT_WORKERS_PER_GPU).
  std::vector<std::string> environment;
  std::string label;  // "GPU 1", for status lines; empty: the command
  // Runs the command prefix and ends it when this process dies, even by SIGKILL (kopt-leash):
  // a launcher waiting in a queue reads no stdin, so nothing else would end its pending job.
  // Used only with a command_prefix; empty: the prefix runs directly.
  std::string leash;
  // Context creation, CUPTI and the first ping, counted from the worker's hello (its process
  // runs). A local worker's count starts at its spawn.
  double start_timeout_seconds = 120;
  // Before the hello, a worker started through a command prefix may wait in a scheduler's queue
  // (srun): that is waiting, not hanging. 0: no limit; else the longest wait before giving up.
  double queue_timeout_seconds = 0;
  // Added to the request's options.max_wall_seconds (the timing budget) for compile and
  // verification; together they are the request's hard deadline.
  double deadline_slack_seconds = 60;
  // How long a worker that announced its exit (fatal, shutdown) or closed stdout may take to
  // exit before it is killed.
  double exit_grace_seconds = 5;
  // A gpu_busy verdict (another process computes on the GPU, or its clocks are held down) is
  // retried for up to this long before it is returned (busy_pause_seconds says the pauses).
  // 0: returned at once (kopt eval, which says so and exits non-zero).
  double busy_retry_seconds = 0;
  // The first retries come after a short fixed pause: one slow check (a host hiccup, another
  // process's short kernel) should cost a candidate a second, not a minute of an idle GPU.
  int busy_quick_retries = 2;
  double busy_quick_pause_seconds = 1;
  // Then pauses of this long, doubling to 2 min, for a GPU that stays busy.
  double busy_first_pause_seconds = 5;
  // The longest reply line read from a worker. A longer one is a broken protocol: the worker is
  // killed and the candidate gets a crash verdict; the daemon never buffers more than this.
  size_t max_reply_bytes = 16u << 20;
};

// The pause before retry `retry` (0: the first) of a gpu_busy verdict.
double busy_pause_seconds(const SandboxOptions& options, int retry);

// The worker's command line: prefix, worker, --device N, extra arguments.
std::vector<std::string> sandbox_command(const SandboxOptions& options);

class SandboxEvaluator final : public Evaluator {
 public:
  explicit SandboxEvaluator(SandboxOptions options);
  ~SandboxEvaluator() override;  // shuts the worker down
  SandboxEvaluator(const SandboxEvaluator&) = delete;
  SandboxEvaluator& operator=(const SandboxEvaluator&) = delete;

  // Thread-safe; concurrent calls are served one after another.
  Result<EvalResult> evaluate(const EvalRequest& request) override;
  std::string name() const override;
  void cancel_pauses() override;
  std::vector<std::string> waiting() const override;
  // Holds this GPU (no evaluation runs on it meanwhile) while the sanitizer's own worker runs.
  SanitizerOutcome sanitize(const EvalRequest& request) override;

  // Starts the worker unless it is running, and returns the "device" object of its ping
  // answer. The error says why it cannot start ("no NVIDIA driver: ...").
  Result<nlohmann::json> start();
  // Any other operation of the protocol ("peaks", "check_task"): sends `body` with op and an id
  // and returns the whole answer. A timeout, a death or an "ok":false answer is an error here.
  Result<nlohmann::json> call(const std::string& op, nlohmann::json body, double timeout_seconds);
  // Asks the worker to exit, and kills it after the grace period.
  void shutdown();

  int workers_started() const;  // 1 + restarts, for tests and logs
  pid_t worker_pid() const;     // -1 when no worker is running

 private:
  // A live worker and what its ping said.
  struct Worker {
    Subprocess process;
    nlohmann::json device;
  };

  // The reply to one request, or why there is none.
  struct Answer {
    nlohmann::json body;             // the reply, when `failure` is empty
    std::optional<Verdict> failure;  // kTimeout or kCrash: the worker is gone
    std::string detail;              // what went wrong, with the worker's last stderr lines
    nlohmann::json device;           // the worker's ping answer, kept past its death
  };

  Result<nlohmann::json> start_locked();
  // start_locked's steps: reap a worker that exited while idle, spawn a new one, and read its
  // lines until it answers the first ping (or fails, which fail_start describes).
  struct StartUp;
  void reap_idle_worker();
  Status spawn_worker();
  Result<nlohmann::json> await_first_answer(StartUp& start);
  std::optional<Result<nlohmann::json>> read_start_line(StartUp& start, const std::string& line);
  Result<nlohmann::json> fail_start(const std::string& message, const std::string& reason = "");
  Result<EvalResult> evaluate_locked(const EvalRequest& request);
  // Sends `message` (an id is added) and waits up to `limit_seconds` for the reply. A worker
  // that dies, hangs or breaks the protocol is killed; one that answers "fatal" is let go.
  Result<Answer> exchange(nlohmann::json message, double limit_seconds);
  // Ends the worker after it failed during a request and describes the failure.
  Answer worker_failure(Verdict verdict, const std::string& what);
  void stop_worker(const std::string& why);
  // Ends a worker process: a launcher (srun) first gets SIGTERM and the grace period, so that
  // it ends its job or step itself, then the whole group gets SIGKILL.
  void end_process(Subprocess& process) const;
  // The command started: the leash (if any) and sandbox_command().
  std::vector<std::string> launch_command() const;
  std::string label() const;
  bool stopping();
  // Records (and logs) that the worker started at `spawned` has not said hello yet.
  void note_waiting(std::chrono::steady_clock::time_point spawned, const Subprocess& process);
  void clear_waiting();
  // New stderr lines of the worker since the request began, for failure messages.
  std::string stderr_tail() const;

  mutable std::mutex mutex_;
  // Separate from mutex_, which an evaluation holds: cancelling must not wait for one to end.
  std::mutex pause_mutex_;
  std::condition_variable pause_cancelled_;
  bool pauses_cancelled_ = false;  // guarded by pause_mutex_
  // A worker waiting in a queue: since when and srun's last word. Apart from mutex_, which the
  // waiting evaluation holds.
  mutable std::mutex waiting_mutex_;
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;
  std::string waiting_reason_;
  // squeue's last answer about the queued srun job (note_waiting), under mutex_.
  std::string queued_job_;
  std::chrono::steady_clock::time_point queue_asked_;
  std::string queue_reason_;
  SandboxOptions options_;
  std::optional<Worker> worker_;
  int64_t next_id_ = 1;
  int started_ = 0;
  size_t stderr_mark_ = 0;
};

}  // namespace kopt
