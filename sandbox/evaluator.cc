#include "sandbox/evaluator.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/json_limits.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "sandbox/confined/child_environment.h"
#include "sandbox/sanitizer_runner.h"
#include "sandbox/slurm_queue.h"

namespace kopt {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

Clock::time_point after_seconds(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// A line quoted in an error message: short, on one line.
std::string excerpt(const std::string& line) {
  std::string text = clip_utf8(line, 120);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return "'" + text + "'";
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  return buf;
}

// Writing to a worker that just died must be an EPIPE error, not a SIGPIPE that kills the
// daemon. kopt's main ignores SIGPIPE already; a test binary or another host may not.
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

bool bool_member(const json& object, const char* key) {
  return object.contains(key) && object.at(key).is_boolean() && object.at(key).get<bool>();
}

std::string string_member(const json& object, const char* key) {
  if (object.contains(key) && object.at(key).is_string()) return object.at(key).get<std::string>();
  return "";
}

}  // namespace

std::vector<std::string> sandbox_command(const SandboxOptions& options) {
  std::vector<std::string> command = options.command_prefix;
  command.push_back(options.worker);
  if (options.device >= 0) {
    command.push_back("--device");
    command.push_back(std::to_string(options.device));
  }
  command.insert(command.end(), options.extra_args.begin(), options.extra_args.end());
  return command;
}

std::vector<std::string> SandboxEvaluator::launch_command() const {
  std::vector<std::string> command = sandbox_command(options_);
  if (!options_.command_prefix.empty() && !options_.leash.empty()) {
    command.insert(command.begin(), {options_.leash, "--"});
  }
  return command;
}

SandboxEvaluator::SandboxEvaluator(SandboxOptions options) : options_(std::move(options)) {
  ignore_sigpipe_once();
}

SandboxEvaluator::~SandboxEvaluator() { shutdown(); }

std::string SandboxEvaluator::name() const { return join(sandbox_command(options_), " "); }

std::string SandboxEvaluator::label() const {
  return options_.label.empty() ? name() : options_.label;
}

int SandboxEvaluator::workers_started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

pid_t SandboxEvaluator::worker_pid() const {
  std::lock_guard lock(mutex_);
  return worker_ ? worker_->process.pid() : -1;
}

Result<json> SandboxEvaluator::start() {
  std::lock_guard lock(mutex_);
  return start_locked();
}

double busy_pause_seconds(const SandboxOptions& options, int retry) {
  if (retry < options.busy_quick_retries) return options.busy_quick_pause_seconds;
  int doublings = std::min(retry - std::max(options.busy_quick_retries, 0), 16);
  return std::min(options.busy_first_pause_seconds * double(1 << doublings), 120.0);
}

Result<EvalResult> SandboxEvaluator::evaluate(const EvalRequest& request) {
  std::unique_lock lock(mutex_);
  auto give_up = after_seconds(options_.busy_retry_seconds);
  for (int retry = 0;; ++retry) {
    double pause = busy_pause_seconds(options_, retry);
    auto result = evaluate_locked(request);
    if (!result || result->verdict != Verdict::kGpuBusy) return result;
    bool cancelled = false;
    {
      std::lock_guard pause_lock(pause_mutex_);
      cancelled = pauses_cancelled_;
    }
    if (cancelled || after_seconds(pause) > give_up) {
      spdlog::warn("{}: {}", name(), result->detail);
      return result;
    }
    // Timing on this GPU pauses; the candidate is judged again when the GPU is quiet, and its
    // number from the busy GPU is never reported.
    spdlog::warn("{}: {}; timing on this GPU pauses for {:.0f} s", name(), result->detail, pause);
    {
      std::unique_lock pause_lock(pause_mutex_);
      pause_cancelled_.wait_for(pause_lock, millis(pause), [this] { return pauses_cancelled_; });
    }
  }
}

SanitizerOutcome SandboxEvaluator::sanitize(const EvalRequest& request) {
  std::lock_guard lock(mutex_);
  return run_sanitizers(request, options_);
}

void SandboxEvaluator::cancel_pauses() {
  {
    std::lock_guard lock(pause_mutex_);
    pauses_cancelled_ = true;
  }
  pause_cancelled_.notify_all();
}

bool SandboxEvaluator::stopping() {
  std::lock_guard lock(pause_mutex_);
  return pauses_cancelled_;
}

std::vector<std::string> SandboxEvaluator::waiting() const {
  std::lock_guard lock(waiting_mutex_);
  if (!waiting_since_) return {};
  double waited = std::chrono::duration<double>(Clock::now() - *waiting_since_).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.0f s", waited);
  return {label() + ": waiting " + text + " to start (" + waiting_reason_ + ")"};
}

void SandboxEvaluator::note_waiting(Clock::time_point spawned, const Subprocess& process) {
  // srun says that it waits on stderr ("srun: job 12 queued and waiting for resources"); its
  // last line is shown. Why it waits (a drained node, GPUs held by others) only squeue says:
  // asked about that one job when it appears, then once a minute (every 5 s until the scheduler
  // has given one).
  std::string reason = "no word from the launcher yet";
  for (const auto& line : split(process.captured_stderr(), '\n')) {
    if (!trim(line).empty()) reason = trim(line);
  }
  auto squeue = squeue_for(options_.command_prefix);
  auto job = squeue ? queued_srun_job(process.captured_stderr()) : std::nullopt;
  auto ask_every = queue_reason_.empty() ? std::chrono::seconds(5) : std::chrono::seconds(60);
  if (job && (*job != queued_job_ || Clock::now() - queue_asked_ >= ask_every)) {
    queued_job_ = *job;
    queue_asked_ = Clock::now();
    queue_reason_ = slurm_pending_reason(*squeue, *job).value_or("");
  }
  if (job && !queue_reason_.empty()) reason += "; Slurm's reason: " + queue_reason_;
  bool first = false, changed = false;
  {
    std::lock_guard lock(waiting_mutex_);
    first = !waiting_since_;
    changed = reason != waiting_reason_;
    if (first) waiting_since_ = spawned;
    waiting_reason_ = reason;
  }
  if (first) {
    spdlog::warn(
        "{}: the worker waits to start: {} (waiting, not hung: its start-up limit of {} "
        "counts from when it runs; other GPUs go on)",
        label(), reason, seconds_text(options_.start_timeout_seconds));
  } else if (changed) {
    spdlog::info("{}: still waiting to start: {}", label(), reason);
  }
}

void SandboxEvaluator::clear_waiting() {
  std::lock_guard lock(waiting_mutex_);
  waiting_since_.reset();
  waiting_reason_.clear();
}

void SandboxEvaluator::end_process(Subprocess& process) const {
  if (!options_.command_prefix.empty() && process.running()) {
    // SIGKILL would leave a pending srun's job in the queue; SIGTERM makes srun revoke it, or
    // end its step (the worker gets the signal too).
    process.send_signal(SIGTERM);
    process.wait_for(millis(options_.exit_grace_seconds));
  }
  process.kill_group();
}

std::string SandboxEvaluator::stderr_tail() const {
  if (!worker_) return "";
  const std::string& text = worker_->process.captured_stderr();
  std::string fresh = stderr_mark_ < text.size() ? text.substr(stderr_mark_) : "";
  std::vector<std::string> lines;
  for (const auto& line : split(fresh, '\n')) {
    if (!trim(line).empty()) lines.push_back(trim(line));
  }
  if (lines.empty()) return "";
  // The last two lines usually say what went wrong ("illegal address", "terminate called").
  size_t first = lines.size() > 2 ? lines.size() - 2 : 0;
  std::vector<std::string> kept(lines.begin() + static_cast<ptrdiff_t>(first), lines.end());
  // Through srun, Slurm's reason is slurmstepd's banner ("*** STEP 12.0 ON gpu3 CANCELLED AT
  // ... DUE TO TIME LIMIT ***"), which srun's own farewell lines may follow.
  for (size_t i = first; i-- > 0;) {
    if (lines[i].find("***") != std::string::npos) {
      kept.insert(kept.begin(), lines[i]);
      break;
    }
  }
  std::string tail = join(kept, " | ");
  if (tail.size() > 400) tail = "..." + std::string(utf8_suffix(tail, 400));
  return "; worker stderr: " + tail;
}

void SandboxEvaluator::stop_worker(const std::string& why) {
  if (!worker_) return;
  end_process(worker_->process);
  spdlog::warn("{} (pid {}): {}; the next request starts a new worker", name(),
               worker_->process.pid(), why);
  worker_.reset();
}

SandboxEvaluator::Answer SandboxEvaluator::worker_failure(Verdict verdict,
                                                          const std::string& what) {
  Answer answer;
  answer.failure = verdict;
  if (worker_) {
    end_process(worker_->process);
    // Collect what the dying worker wrote to stderr after the kill closed its pipes.
    (void)worker_->process.read_all(after_seconds(0.2));
    answer.device = worker_->device;
  }
  answer.detail = what + stderr_tail();
  stop_worker(answer.detail);
  return answer;
}

// One start of the worker: the ping it must answer and how long it may take.
struct SandboxEvaluator::StartUp {
  std::string who;
  int64_t id = 0;
  Clock::time_point spawned;
  bool running = false;  // said hello (or started directly): a silence is a hang
  Clock::time_point deadline;
};

Result<json> SandboxEvaluator::start_locked() {
  if (worker_ && worker_->process.running()) return worker_->device;
  reap_idle_worker();
  if (Status spawned = spawn_worker(); !spawned) return make_error(spawned.error());
  StartUp start;
  start.who = name();
  start.id = next_id_++;
  // Through a launcher (srun) the worker may wait in a queue before it runs: until its hello,
  // only queue_timeout_seconds (if any) applies, checked with the stop flag every second.
  start.spawned = Clock::now();
  start.running = options_.command_prefix.empty();
  start.deadline = start.running ? after_seconds(options_.start_timeout_seconds)
                   : options_.queue_timeout_seconds > 0
                       ? after_seconds(options_.queue_timeout_seconds)
                       : Clock::time_point::max();
  struct ClearWaiting {
    SandboxEvaluator* self;
    ~ClearWaiting() { self->clear_waiting(); }
  } clear_waiting_at_exit{this};
  // A worker that cannot start (no GPU) prints its error and exits without reading stdin, so a
  // failed write is not yet an error: its line is read below.
  (void)worker_->process.write_all(encode_line(make_request(start.id, "ping")));
  return await_first_answer(start);
}

void SandboxEvaluator::reap_idle_worker() {
  if (!worker_) return;
  auto status = worker_->process.wait_status();
  // Its last words say why (through srun: slurmstepd's "*** STEP 12.0 ... CANCELLED ***").
  (void)worker_->process.read_all(after_seconds(0.2));
  stop_worker("the worker exited while idle (" +
              (status ? describe_wait_status(*status) : std::string("unknown status")) + ")" +
              stderr_tail());
}

Status SandboxEvaluator::spawn_worker() {
  // The worker runs model-written code: it sees no key of the daemon's environment, inherits no
  // descriptor but its pipes, and dumps no core.
  Subprocess::Options spawn;
  spawn.stderr_mode = Subprocess::StderrMode::kCapture;
  std::vector<std::string> environment = worker_environment();
  for (const std::string& entry : options_.environment) {
    // Ours win over the daemon's own value of the same name.
    std::string name = entry.substr(0, entry.find('=') + 1);
    std::erase_if(environment, [&](const std::string& e) { return e.starts_with(name); });
    environment.push_back(entry);
  }
  spawn.environment = std::move(environment);
  spawn.limits = worker_limits();
  auto child = Subprocess::start(launch_command(), spawn);
  if (!child) return make_error("cannot start the sandbox worker: " + child.error());
  ++started_;
  worker_.emplace(Worker{std::move(*child), json::object()});
  stderr_mark_ = 0;
  return ok_status();
}

// `reason`: what the worker itself said, if anything; its stderr often repeats it.
Result<json> SandboxEvaluator::fail_start(const std::string& message, const std::string& reason) {
  Subprocess& process = worker_->process;
  if (!process.wait_for(millis(options_.exit_grace_seconds))) end_process(process);
  (void)process.read_all(after_seconds(0.2));
  std::string tail = stderr_tail();
  std::string text = message;
  if (reason.empty() || tail.find(reason) == std::string::npos) text += tail;
  worker_.reset();
  return make_error(text);
}

Result<json> SandboxEvaluator::await_first_answer(StartUp& start) {
  Subprocess& process = worker_->process;
  const std::string& who = start.who;
  while (true) {
    auto line = process.read_line(
        start.running ? start.deadline : std::min(start.deadline, after_seconds(1)),
        options_.max_reply_bytes);
    if (!line && line.error().find("exceeds") != std::string::npos) {
      end_process(process);
      return fail_start(who + " broke the protocol at start-up: " + line.error());
    }
    if (!line && !start.running && Clock::now() < start.deadline) {
      if (stopping()) {
        end_process(process);
        return fail_start(who + " was still waiting to start when the daemon stopped");
      }
      note_waiting(start.spawned, process);
      continue;
    }
    if (!line) {
      end_process(process);
      return fail_start(start.running ? who + " did not answer its first ping within " +
                                            seconds_text(options_.start_timeout_seconds)
                                      : who + " did not start within " +
                                            seconds_text(options_.queue_timeout_seconds));
    }
    if (!*line) {
      auto status = process.wait_for(millis(options_.exit_grace_seconds));
      return fail_start(
          who + " exited during start-up (" +
          (status ? describe_wait_status(*status) : std::string("closed its output")) + ")");
    }
    if (trim(**line).empty()) continue;
    if (auto answer = read_start_line(start, **line)) return std::move(*answer);
  }
}

std::optional<Result<json>> SandboxEvaluator::read_start_line(StartUp& start,
                                                              const std::string& line) {
  Subprocess& process = worker_->process;
  const std::string& who = start.who;
  // The start-up failure line ("no NVIDIA driver") is honoured even without an envelope.
  json raw = parse_json_bounded(line);
  if (raw.is_object() && !bool_member(raw, "ok") && !string_member(raw, "error").empty()) {
    std::string reason = string_member(raw, "error");
    return fail_start(who + " cannot start: " + reason, reason);
  }
  auto message = parse_message(line);
  if (!message) {
    end_process(process);
    return fail_start(who + " sent a malformed line at start-up (" + message.error() +
                      "): " + excerpt(line));
  }
  if (message->version != kProtocolVersion) {
    end_process(process);
    return fail_start(who + " speaks sandbox protocol v" + std::to_string(message->version) +
                      " but this kopt speaks v" + std::to_string(kProtocolVersion) +
                      ": build both from the same tree");
  }
  if (is_hello(message->body)) {
    // The process runs: from here on, a silence is a hang.
    start.running = true;
    start.deadline = after_seconds(options_.start_timeout_seconds);
    double waited = std::chrono::duration<double>(Clock::now() - start.spawned).count();
    if (!waiting().empty()) {
      spdlog::info("{}: the worker runs (pid {} on {}) after {} waiting to start", label(),
                   message->body["hello"].value("pid", int64_t(0)),
                   message->body["hello"].value("host", std::string("?")), seconds_text(waited));
    }
    clear_waiting();
    return std::nullopt;
  }
  if (message->id != start.id || !bool_member(message->body, "ok")) {
    end_process(process);
    return fail_start(who + " answered the ping (id " + std::to_string(start.id) +
                      ") with: " + excerpt(line));
  }
  if (message->body.contains("device")) worker_->device = message->body.at("device");
  spdlog::debug("{} started (pid {}): {}", who, process.pid(), worker_->device.dump());
  return Result<json>(worker_->device);
}

Result<SandboxEvaluator::Answer> SandboxEvaluator::exchange(json message, double limit_seconds) {
  auto started = start_locked();
  if (!started) return make_error(started.error());
  int64_t id = next_id_++;
  message["v"] = kProtocolVersion;
  message["id"] = id;
  std::string line = encode_line(message);
  stderr_mark_ = worker_->process.captured_stderr().size();
  Status sent = worker_->process.write_all(line);
  if (!sent) {
    // The worker died between requests (its stdin is closed): not this request's fault, so it
    // gets a fresh worker rather than a crash verdict.
    stop_worker("sending the request failed: " + sent.error());
    started = start_locked();
    if (!started) return make_error(started.error());
    sent = worker_->process.write_all(line);
    if (!sent)
      return worker_failure(Verdict::kCrash, "sending the request failed: " + sent.error());
  }

  auto deadline = after_seconds(limit_seconds);
  while (true) {
    auto reply_line = worker_->process.read_line(deadline, options_.max_reply_bytes);
    if (!reply_line) {
      // read_line waits in whole milliseconds, so it may give up just before the deadline.
      if (Clock::now() + std::chrono::milliseconds(10) < deadline) {
        return worker_failure(Verdict::kCrash,
                              "reading the worker's answer failed: " + reply_line.error());
      }
      return worker_failure(Verdict::kTimeout,
                            "no answer within " + seconds_text(limit_seconds) + "; worker killed");
    }
    if (!*reply_line) {
      auto status = worker_->process.wait_for(millis(options_.exit_grace_seconds));
      return worker_failure(Verdict::kCrash,
                            "the worker died during the request (" +
                                (status ? describe_wait_status(*status)
                                        : std::string("closed its output but kept running")) +
                                ")");
    }
    const std::string& text = **reply_line;
    if (trim(text).empty()) continue;
    auto reply = parse_message(text);
    if (!reply) {
      return worker_failure(Verdict::kCrash, "the worker broke the protocol (" + reply.error() +
                                                 "): " + excerpt(text));
    }
    if (reply->version != kProtocolVersion || reply->id != id) {
      return worker_failure(Verdict::kCrash, "the worker broke the protocol: request id " +
                                                 std::to_string(id) + " answered with " +
                                                 excerpt(text));
    }
    Answer answer;
    answer.body = std::move(reply->body);
    answer.device = worker_->device;
    if (bool_member(answer.body, "fatal")) {
      // The worker's CUDA context is lost; it exits after this answer.
      if (!worker_->process.wait_for(millis(options_.exit_grace_seconds))) {
        spdlog::warn("{}: the worker announced a fatal error but did not exit", name());
      }
      stop_worker("it reported a lost CUDA context");
    }
    return answer;
  }
}

Result<EvalResult> SandboxEvaluator::evaluate_locked(const EvalRequest& request) {
  auto sent = std::chrono::steady_clock::now();
  json message = to_json(request);
  message["op"] = "evaluate";
  double limit = request.options.max_wall_seconds + options_.deadline_slack_seconds;
  auto answer = exchange(std::move(message), limit);
  if (!answer) return make_error(answer.error());
  if (answer->failure) {
    EvalResult result;
    result.verdict = *answer->failure;
    result.detail = answer->detail;
    result.shapes_verified = -1;  // the worker never answered (past the deadline, or it died)
    if (result.verdict == Verdict::kTimeout) {
      result.detail += " (the limit is max_wall_seconds plus " +
                       seconds_text(options_.deadline_slack_seconds) +
                       " for compile and verification)";
    }
    result.device = std::move(answer->device);
    return result;
  }
  const json& body = answer->body;
  if (!bool_member(body, "ok")) {
    std::string error = string_member(body, "error");
    return make_error(name() +
                      " refused the request: " + (error.empty() ? dump_json(body) : error));
  }
  if (!body.contains("result")) {
    return make_error(name() + " answered without a result: " + excerpt(dump_json(body)));
  }
  auto result = eval_result_from_json(body.at("result"));
  if (!result) return make_error(name() + " sent a result kopt cannot read: " + result.error());
  if (result->device.is_null()) result->device = std::move(answer->device);
  // The whole exchange (encoding, the pipe both ways, a worker start, decoding): less the
  // worker's total, what the round trip costs (candidate_evaluation.cc logs it).
  result->phases["daemon.exchange"] =
      std::round(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent)
                     .count() *
                 10) /
      10;
  return std::move(*result);
}

Result<json> SandboxEvaluator::call(const std::string& op, json body, double timeout_seconds) {
  std::lock_guard lock(mutex_);
  body["op"] = op;
  auto answer = exchange(std::move(body), timeout_seconds);
  if (!answer) return make_error(answer.error());
  if (answer->failure) return make_error(name() + ": " + op + ": " + answer->detail);
  if (!bool_member(answer->body, "ok")) {
    std::string error = string_member(answer->body, "error");
    return make_error(name() + ": " + op + ": " +
                      (error.empty() ? dump_json(answer->body) : error));
  }
  return std::move(answer->body);
}

void SandboxEvaluator::shutdown() {
  std::lock_guard lock(mutex_);
  if (!worker_) return;
  Subprocess& process = worker_->process;
  if (process.running() && process.write_all(encode_line(make_request(next_id_++, "shutdown")))) {
    process.close_stdin();
    (void)process.read_line(after_seconds(options_.exit_grace_seconds));
    process.wait_for(millis(options_.exit_grace_seconds));
  }
  end_process(process);
  worker_.reset();
}

}  // namespace kopt
