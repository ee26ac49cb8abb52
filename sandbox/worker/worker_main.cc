// kopt-sandbox: the long-lived GPU worker. One per GPU; owns one CUDA context; answers protocol v2
// requests (sandbox/protocol.h) on stdin and on the pipe it was given as stdout, one JSON object
// per line. That pipe is moved to a private descriptor before anything else runs, and fd 1 goes to
// a bounded log (private_channel.h): a kernel's printf cannot reach the daemon. After a sticky CUDA
// error it sends its verdict with "fatal":true and exits, so the next request meets a fresh
// context.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sandbox/gpu_turn.h"
#include "sandbox/protocol.h"
#include "sandbox/worker/cublaslt_baseline.h"
#include "sandbox/worker/cupti_timer.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/evaluation.h"
#include "sandbox/worker/gpu_quiet_check.h"
#include "sandbox/worker/hygiene.h"
#include "sandbox/worker/parent_watch.h"
#include "sandbox/worker/private_channel.h"
#include "sandbox/worker/speed_of_light.h"
#include "sandbox/worker/support_kernels.h"

namespace {

using nlohmann::json;
using namespace kopt;

constexpr int kExitNoGpu = 3;
constexpr int kExitContextLost = 4;

// The protocol channel: the pipe the daemon gave as stdout, moved off fd 1 at start.
int g_channel = STDOUT_FILENO;

void send(const json& message) { (void)worker::write_line(g_channel, encode_line(message)); }

json reply(const json& request, bool ok) {
  int64_t id = request.is_object() && request.contains("id") && request["id"].is_number_integer()
                   ? request["id"].get<int64_t>()
                   : 0;
  return make_response(id, ok);
}

int usage() {
  std::fprintf(stderr,
               "usage: kopt-sandbox [--device N] [--output-log PATH] [--under-profiler] "
               "[--yield-to-timing] [--share-gpu]\n"
               "Speaks the kopt sandbox protocol v%d on stdin/stdout; started by kopt itself.\n"
               "Whatever kernels print goes to the output log (default: %s), capped at %zu "
               "bytes;\n--output-log '' discards it.\n",
               kProtocolVersion, worker::default_output_log_path(0).c_str(), worker::kOutputLogCap);
  return 2;
}

void send_fatal(const std::string& why) {
  send({{"v", kProtocolVersion}, {"id", 0}, {"ok", false}, {"fatal", true}, {"error", why}});
}

// `response` becomes the failure of `request` with `error`.
void fail(json& response, const json& request, const std::string& error) {
  response = reply(request, false);
  response["error"] = error;
}

struct Arguments {
  int ordinal = 0;
  std::optional<std::string> output_log;
  // An outside profiler or compute-sanitizer owns the driver's callbacks (also said by
  // KOPT_SANDBOX_UNDER_PROFILER=1, which an environment allow-list may not pass on).
  bool under_profiler = false;
  // The sanitizer lane's worker: computes only between the GPU's timing turns and registers as
  // kopt's own for the timing worker's quiet-GPU checks (sandbox/gpu_turn.h).
  bool yield_to_timing = false;
  // One of several timing workers on this GPU (daemon.workers_per_gpu): computes in shared units,
  // times in the GPU's timing turn, and registers as kopt's own for the others' checks.
  bool share_gpu = false;
};

// The exit code where the arguments end the process (--help, a bad flag), else nothing.
std::optional<int> parse_arguments(int argc, char** argv, Arguments& args) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      args.ordinal = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--under-profiler")) {
      args.under_profiler = true;
    } else if (!std::strcmp(argv[i], "--yield-to-timing")) {
      args.yield_to_timing = true;
    } else if (!std::strcmp(argv[i], "--share-gpu")) {
      args.share_gpu = true;
    } else if (!std::strcmp(argv[i], "--output-log") && i + 1 < argc) {
      args.output_log = argv[++i];
    } else if (!std::strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else {
      return usage();
    }
  }
  return std::nullopt;
}

// Before any CUDA call: from here on fd 1 is the output log, not the daemon.
bool open_channel(const Arguments& args) {
  auto channel = worker::divert_stdout_to_log(
      args.output_log.value_or(worker::default_output_log_path(args.ordinal)));
  if (!channel) {
    std::fprintf(stderr, "kopt-sandbox: cannot set up its protocol channel: %s\n",
                 channel.error().c_str());
    return false;
  }
  g_channel = *channel;
  return true;
}

// CUPTI first: activity collection is set up before the context exists.
// KOPT_SANDBOX_UNDER_PROFILER=1: an outside profiler (ncu, bench/profile_fidelity.py) owns
// the GPU's counters; no activity tracing then, so such a worker can verify but not time.
worker::Device* open_device(const Arguments& args) {
  const char* outside = std::getenv("KOPT_SANDBOX_UNDER_PROFILER");
  bool under_profiler = args.under_profiler || (outside && std::string(outside) == "1");
  auto cupti = under_profiler ? ok_status() : worker::CuptiKernelTimer::enable();
  auto device = worker::Device::open(args.ordinal);
  if (!device || !cupti) {
    std::string why = !device ? device.error() : cupti.error();
    send_fatal(why);
    std::fprintf(stderr, "kopt-sandbox: %s\n", why.c_str());
    return nullptr;
  }
  return *device;
}

// Kept input sets: at most 30% of the GPU's memory (and half of what is free now), so timing
// buffers and the largest shapes, which are verified on demand, still fit beside them. Workers
// that share one GPU (KOPT_WORKERS_PER_GPU, the mutation bench's --workers) split that share.
size_t input_pool_bytes(worker::Device& gpu) {
  worker::MemoryInfo memory = worker::memory_info(gpu);
  size_t sharing = 1;
  if (const char* n = std::getenv("KOPT_WORKERS_PER_GPU"); n && std::atoi(n) > 1)
    sharing = size_t(std::atoi(n));
  return std::min(memory.total_bytes / 10 * 3, memory.free_bytes / 2) / sharing;
}

// What every request may use: the GPU, its support kernels and what evaluations keep.
struct Worker {
  worker::Device& gpu;
  worker::SupportKernels& support;
  worker::GpuQuietCheck quiet;  // one per process: its probe's history serves every evaluation
  worker::InputPool pool;
  worker::BaselineHistory baselines;
};

// An op's handler fills `response` (or makes it a failure); false: the worker exits after it.
using OpHandler = bool (*)(Worker&, const json& request, json& response);

bool answer_ping(Worker& w, const json&, json& response) {
  response["device"] = w.gpu.info().to_json();
  return true;
}

bool answer_shutdown(Worker&, const json&, json&) { return false; }

bool answer_peaks(Worker& w, const json& request, json& response) {
  auto peaks = worker::device_peaks(w.gpu, w.support);
  if (peaks)
    response["peaks"] = peaks->to_json();
  else
    fail(response, request, peaks.error());
  return true;
}

bool answer_evaluate(Worker& w, const json& request, json& response) {
  auto parsed = eval_request_from_json(request);
  if (!parsed) {
    fail(response, request, parsed.error());
    return true;
  }
  auto result = worker::evaluate(w.gpu, w.support, w.quiet, *parsed, &w.pool, &w.baselines);
  // The kept sets may be what leaves too little memory for a big shape: give them
  // back and try once more.
  if (!result && w.pool.bytes() > 0 && result.error().find("OUT_OF_MEMORY") != std::string::npos &&
      !w.gpu.context_lost()) {
    w.pool.clear();
    result = worker::evaluate(w.gpu, w.support, w.quiet, *parsed, &w.pool, &w.baselines);
  }
  if (result)
    response["result"] = to_json(*result);
  else
    fail(response, request, result.error());
  return true;
}

void put_result(const Result<json>& result, const json& request, json& response) {
  if (result)
    response["result"] = *result;
  else
    fail(response, request, result.error());
}

bool answer_check_task(Worker& w, const json& request, json& response) {
  put_result(worker::check_task_hygiene(w.gpu, w.support, request), request, response);
  return true;
}

bool answer_cublaslt(Worker& w, const json& request, json& response) {
  put_result(worker::measure_cublaslt(w.gpu, w.support, request), request, response);
  return true;
}

constexpr std::pair<std::string_view, OpHandler> kOps[] = {
    {"ping", answer_ping},         {"shutdown", answer_shutdown},     {"peaks", answer_peaks},
    {"evaluate", answer_evaluate}, {"check_task", answer_check_task}, {"cublaslt", answer_cublaslt},
};

// One request's answer in `response`; false: the worker exits after sending it.
bool answer(Worker& w, const json& request, json& response) {
  try {
    if (request.value("v", 0) != kProtocolVersion) {
      fail(response, request,
           "protocol version " + request.value("v", json(0)).dump() +
               " is not supported (this worker speaks " + std::to_string(kProtocolVersion) + ")");
      return true;
    }
    std::string op = request.value("op", "");
    for (const auto& [name, handle] : kOps)
      if (op == name) return handle(w, request, response);
    fail(response, request, "unknown op '" + op + "'");
  } catch (const std::exception& e) {
    fail(response, request, std::string("worker error: ") + e.what());
  }
  return true;
}

// Requests one per line on stdin until it closes or one asks for shutdown.
int serve(Worker& w) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    json request;
    try {
      request = json::parse(line);
    } catch (const json::parse_error& e) {
      send({{"v", kProtocolVersion},
            {"id", 0},
            {"ok", false},
            {"error", std::string("malformed request: ") + e.what()}});
      continue;
    }
    json response = reply(request, true);
    if (!answer(w, request, response)) {
      send(response);
      return 0;
    }
    if (w.gpu.context_lost()) {
      response["fatal"] = true;
      send(response);
      // No destructors and no CUPTI teardown: with a kernel still running (a hang) they would wait
      // for it forever. Process exit makes the driver destroy the context and stop the kernel.
      std::_Exit(kExitContextLost);
    }
    send(response);
  }
  return 0;
}

}  // namespace

// Registers this process as a yielding worker of GPU `ordinal` for the rest of its life (the
// lane's with its parent, compute-sanitizer; a co-worker alone) and returns the GPU's turn name
// (nothing where the driver cannot name it: open_device() then reports the same failure). The
// registration is never removed here: the context outlives main() (the driver tears it down at
// exit, the tool flushes its report), so the entry must too; registered_yielding_pids() drops it
// once no process of it runs.
std::optional<std::string> register_as_yielding(int ordinal, const Arguments& args) {
  auto id = worker::gpu_turn_id(ordinal);
  if (!id) return std::nullopt;
  new YieldingRegistration(*id, args.yield_to_timing);  // kept to the end of the process
  set_yielding_worker(args.yield_to_timing);
  set_co_worker(args.share_gpu);
  return *id;
}

// A co-worker measures the GPU's peaks (once per GPU model; then they are read from the cache)
// in the timing turn: measured beside another worker's kernels they would be low, and every
// later speed-of-light bound with them.
void measure_peaks_alone(worker::Device& gpu, worker::SupportKernels& support,
                         const std::string& turn_id) {
  TimingTurn turn(turn_id);
  (void)worker::device_peaks(gpu, support);  // a failure is the evaluation's to report
}

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  Arguments args;
  if (auto exit_code = parse_arguments(argc, argv, args)) return *exit_code;
  if (!open_channel(args)) return kExitNoGpu;
  // The process runs: said at once, so that a daemon that started it through a scheduler (srun)
  // knows it left the queue and times context creation from here.
  send(make_hello());
  // Before anything slow: a daemon that dies while this worker starts must not leave it behind.
  // A yielding worker may wait for a timing turn to end before it leaves (end_within_a_turn).
  bool shares = args.yield_to_timing || args.share_gpu;
  worker::exit_when_stdin_closes(shares ? kTimingTurnMaxWaitSeconds : 0.5);
  // A yielding worker (or co-worker) registers before its context exists and opens the GPU within
  // a turn: a context that appears while another worker times would be "another process" to its
  // checks.
  std::optional<std::string> yielding_id;
  if (shares) yielding_id = register_as_yielding(args.ordinal, args);
  std::optional<YieldingTurn> opening;
  if (yielding_id) opening.emplace(*yielding_id);
  worker::Device* gpu = open_device(args);
  if (!gpu) return kExitNoGpu;
  auto support = worker::SupportKernels::load(*gpu, gpu->info().arch());
  if (!support) {
    send_fatal(support.error());
    return kExitNoGpu;
  }
  opening.reset();
  if (yielding_id && args.share_gpu && !args.yield_to_timing)
    measure_peaks_alone(*gpu, *support, *yielding_id);
  int exit_code = 0;
  {
    // The kept sets are freed within a unit (GPU work), before the unit is released.
    std::optional<YieldingTurn> freeing;
    Worker w{*gpu, *support, worker::GpuQuietCheck(*gpu, *support),
             worker::InputPool(input_pool_bytes(*gpu)), worker::BaselineHistory()};
    exit_code = serve(w);
    if (yielding_id) freeing.emplace(*yielding_id);
  }
  if (!yielding_id) return exit_code;
  // The lane's context is released outside any unit: under compute-sanitizer its teardown is the
  // tool's own end of run, ~12 s after the last GPU work of each tool, and timing waited for all
  // of it (issue 35; docs/gpu-runs/2026-11-28-h200-session11). SanitizerYieldsOnGpu holds every
  // median timed beside a whole pass to the lone one's. A co-worker's ordinary teardown, and an
  // abandoned context (a kernel that will not stop), are the driver's at exit, within a unit held
  // until the process ends (the flock's descriptor closes).
  if (!args.yield_to_timing || !gpu->release_context()) new YieldingTurn(*yielding_id);
  return exit_code;
}
