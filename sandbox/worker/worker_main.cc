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

#include "sandbox/protocol.h"
#include "sandbox/worker/cublaslt_baseline.h"
#include "sandbox/worker/cupti_timer.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/evaluation.h"
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
               "usage: kopt-sandbox [--device N] [--output-log PATH] [--under-profiler]\n"
               "Speaks the kopt sandbox protocol v%d on stdin/stdout; started by kopt itself.\n"
               "Whatever kernels print goes to the output log (default: %s), capped at %zu "
               "bytes;\n--output-log '' discards it.\n",
               kProtocolVersion, worker::default_output_log_path(0).c_str(), worker::kOutputLogCap);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int ordinal = 0;
  std::optional<std::string> output_log;
  // An outside profiler or compute-sanitizer owns the driver's callbacks (also said by
  // KOPT_SANDBOX_UNDER_PROFILER=1, which an environment allow-list may not pass on).
  bool under_profiler = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      ordinal = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--under-profiler")) {
      under_profiler = true;
    } else if (!std::strcmp(argv[i], "--output-log") && i + 1 < argc) {
      output_log = argv[++i];
    } else if (!std::strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else {
      return usage();
    }
  }
  // Before any CUDA call: from here on fd 1 is the output log, not the daemon.
  auto channel =
      worker::divert_stdout_to_log(output_log.value_or(worker::default_output_log_path(ordinal)));
  if (!channel) {
    std::fprintf(stderr, "kopt-sandbox: cannot set up its protocol channel: %s\n",
                 channel.error().c_str());
    return kExitNoGpu;
  }
  g_channel = *channel;
  // The process runs: said at once, so that a daemon that started it through a scheduler (srun)
  // knows it left the queue and times context creation from here.
  send(make_hello());
  // Before anything slow: a daemon that dies while this worker starts must not leave it behind.
  worker::exit_when_stdin_closes(0.5);
  // CUPTI first: activity collection is set up before the context exists.
  // KOPT_SANDBOX_UNDER_PROFILER=1: an outside profiler (ncu, bench/profile_fidelity.py) owns
  // the GPU's counters; no activity tracing then, so such a worker can verify but not time.
  const char* outside = std::getenv("KOPT_SANDBOX_UNDER_PROFILER");
  under_profiler = under_profiler || (outside && std::string(outside) == "1");
  auto cupti = under_profiler ? ok_status() : worker::CuptiKernelTimer::enable();
  auto device = worker::Device::open(ordinal);
  if (!device || !cupti) {
    std::string why = !device ? device.error() : cupti.error();
    send({{"v", kProtocolVersion}, {"id", 0}, {"ok", false}, {"fatal", true}, {"error", why}});
    std::fprintf(stderr, "kopt-sandbox: %s\n", why.c_str());
    return kExitNoGpu;
  }
  worker::Device& gpu = **device;
  auto support = worker::SupportKernels::load(gpu, gpu.info().arch());
  if (!support) {
    send({{"v", kProtocolVersion},
          {"id", 0},
          {"ok", false},
          {"fatal", true},
          {"error", support.error()}});
    return kExitNoGpu;
  }
  // Kept input sets: at most 30% of the GPU's memory (and half of what is free now), so timing
  // buffers and the largest shapes, which are verified on demand, still fit beside them. Workers
  // that share one GPU (KOPT_WORKERS_PER_GPU, the mutation bench's --workers) split that share.
  size_t free_bytes = 0, total_bytes = 0;
  gpu.driver().cuMemGetInfo(&free_bytes, &total_bytes);
  size_t sharing = 1;
  if (const char* n = std::getenv("KOPT_WORKERS_PER_GPU"); n && std::atoi(n) > 1)
    sharing = size_t(std::atoi(n));
  worker::InputPool pool(std::min(total_bytes / 10 * 3, free_bytes / 2) / sharing);
  worker::BaselineHistory baselines;
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
    try {
      if (request.value("v", 0) != kProtocolVersion) {
        response = reply(request, false);
        response["error"] = "protocol version " + request.value("v", json(0)).dump() +
                            " is not supported (this worker speaks " +
                            std::to_string(kProtocolVersion) + ")";
      } else {
        std::string op = request.value("op", "");
        if (op == "ping") {
          response["device"] = gpu.info().to_json();
        } else if (op == "shutdown") {
          send(response);
          return 0;
        } else if (op == "peaks") {
          auto peaks = worker::device_peaks(gpu, *support);
          if (peaks) {
            response["peaks"] = peaks->to_json();
          } else {
            response = reply(request, false);
            response["error"] = peaks.error();
          }
        } else if (op == "evaluate") {
          auto parsed = eval_request_from_json(request);
          if (!parsed) {
            response = reply(request, false);
            response["error"] = parsed.error();
          } else {
            auto result = worker::evaluate(gpu, *support, *parsed, &pool, &baselines);
            // The kept sets may be what leaves too little memory for a big shape: give them
            // back and try once more.
            if (!result && pool.bytes() > 0 &&
                result.error().find("OUT_OF_MEMORY") != std::string::npos && !gpu.context_lost()) {
              pool.clear();
              result = worker::evaluate(gpu, *support, *parsed, &pool, &baselines);
            }
            if (result) {
              response["result"] = to_json(*result);
            } else {
              response = reply(request, false);
              response["error"] = result.error();
            }
          }
        } else if (op == "check_task" || op == "cublaslt") {
          auto result = op == "check_task" ? worker::check_task_hygiene(gpu, *support, request)
                                           : worker::measure_cublaslt(gpu, *support, request);
          if (result) {
            response["result"] = *result;
          } else {
            response = reply(request, false);
            response["error"] = result.error();
          }
        } else {
          response = reply(request, false);
          response["error"] = "unknown op '" + op + "'";
        }
      }
    } catch (const std::exception& e) {
      response = reply(request, false);
      response["error"] = std::string("worker error: ") + e.what();
    }
    if (gpu.context_lost()) {
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
