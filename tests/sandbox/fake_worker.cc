// A stand-in for kopt-sandbox that speaks the real protocol (sandbox/protocol.h) and misbehaves
// on request, so the supervisor's handling of hangs, deaths and garbage is tested without a GPU.
//
// Start-up behaviour, from arguments:
//   --device N          reported back as device.ordinal
//   --start=fail        print a start-up error line (as the real worker does without a GPU), exit 3
//   --start=silent      exit 4 without a word (not even the hello every other start sends)
//   --start=hang        never answer
//   --start=garbage     answer the ping with a line that is not JSON
//   --version=N         speak protocol version N
// Per request, from the candidate's source text:
//   HANG                sleep forever            HANG_CHILD PATH   also fork a sleeping child,
//   DIE                 raise SIGSEGV                              its pid written to PATH
//   EXIT                exit 5 mid-request       FATAL             answer crash + "fatal", exit
//   FATAL_ONCE PATH     FATAL if PATH does not exist (and creates it), else as usual
//   GARBAGE             answer a non-JSON line   WRONG_ID          answer with another id
//   STDERR              write to stderr, then die                  REFUSE  answer ok:false
//   SLOW MS             answer ok after MS milliseconds
//   LONG N              answer ok with a reply line of about N bytes (a detail of N letters)
//   BUSY N              answer gpu_busy to this worker's first N such requests, then ok
// From the environment: KOPT_FAKE_EVAL_MS=N makes every evaluation take N ms (a request that is
// in flight long enough for a test to cancel its Slurm step); KOPT_FAKE_ALIVE_FILE=PATH is a file
// that exists while the worker runs (created at start, removed at shutdown).
// A "cublaslt" request (sandbox/worker/cublaslt_baseline.h) is answered with two rows, as an H100
// measured sgemm, when it carries a task.json with a "cublaslt" mapping and a reference source.
// Anything else is answered with verdict ok and the request echoed in detail and device.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "sandbox/protocol.h"

namespace {

using nlohmann::json;

int g_version = kopt::kProtocolVersion;
int g_device = -1;
int g_requests = 0;

void send(const json& message) { std::cout << kopt::encode_line(message) << std::flush; }

json response(int64_t id, bool ok, const json& extra = json::object()) {
  json j = kopt::make_response(id, ok);
  j["v"] = g_version;
  j.update(extra);
  return j;
}

json device_info() {
  const char* greeting = std::getenv("KOPT_FAKE_GREETING");
  return {{"name", "fake"},
          {"ordinal", g_device},
          {"pid", static_cast<int>(getpid())},
          {"requests", g_requests},
          {"greeting", greeting ? greeting : ""}};
}

json make_hello_line() {
  json hello = kopt::make_hello();
  hello["v"] = g_version;
  return hello;
}

[[noreturn]] void sleep_forever() {
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

bool has(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

// The word after `word` in `text` (a path or a number).
std::string argument_of(const std::string& text, const char* word) {
  size_t start = text.find(word) + std::strlen(word);
  while (start < text.size() && text[start] == ' ') ++start;
  size_t end = text.find_first_of(" \n", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

void evaluate(int64_t id, const json& body) {
  auto request = kopt::eval_request_from_json(body);
  if (!request) {
    send(response(id, false, {{"error", request.error()}}));
    return;
  }
  const std::string& source = request->candidate.source;
  if (const char* ms = std::getenv("KOPT_FAKE_EVAL_MS"); ms && *ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  }
  if (has(source, "HANG_CHILD")) {
    pid_t child = fork();
    if (child == 0) sleep_forever();
    std::ofstream(argument_of(source, "HANG_CHILD")) << child << "\n";
    sleep_forever();
  }
  if (has(source, "HANG")) sleep_forever();
  if (has(source, "STDERR")) {
    std::fprintf(stderr, "fake worker: about to fail\nfake worker: CUDA_ERROR_ILLEGAL_ADDRESS\n");
    std::fflush(stderr);
    raise(SIGSEGV);
  }
  if (has(source, "DIE")) raise(SIGSEGV);
  if (has(source, "EXIT")) std::exit(5);
  if (has(source, "GARBAGE")) {
    std::cout << "this is not a protocol line\n" << std::flush;
    return;
  }
  if (has(source, "SLOW")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(argument_of(source, "SLOW"))));
  }
  kopt::EvalResult result;
  if (has(source, "LONG")) {
    result.verdict = kopt::Verdict::kOk;
    result.detail.assign(std::stoul(argument_of(source, "LONG")), 'x');
    send(response(id, true, {{"result", kopt::to_json(result)}}));
    return;
  }
  if (has(source, "BUSY")) {
    static int busy_left = std::stoi(argument_of(source, "BUSY"));
    if (busy_left-- > 0) {
      result.verdict = kopt::Verdict::kGpuBusy;
      result.detail = "the GPU is not ours alone before timing: 1 other process on this GPU";
      result.device = device_info();
      send(response(id, true, {{"result", kopt::to_json(result)}}));
      return;
    }
  }
  if (has(source, "REFUSE")) {
    send(response(id, false, {{"error", "cannot parse the task"}}));
    return;
  }
  // FATAL_ONCE PATH: FATAL the first time (PATH then exists), ok from then on.
  bool fatal = has(source, "FATAL");
  if (has(source, "FATAL_ONCE")) {
    std::string path = argument_of(source, "FATAL_ONCE");
    fatal = !std::ifstream(path).good();
    if (fatal) std::ofstream(path) << "crashed once\n";
  }
  if (fatal) {
    result.verdict = kopt::Verdict::kCrash;
    result.detail = "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS";
    send(response(id, true, {{"result", kopt::to_json(result)}, {"fatal", true}}));
    std::exit(0);
  }
  result.verdict = kopt::Verdict::kOk;
  result.detail = "echo " + request->candidate.origin +
                  " rounds=" + std::to_string(request->options.rounds) +
                  " seed=" + std::to_string(request->options.seed);
  result.device = device_info();
  result.candidate_time = kopt::TimingSummary{12.5, 0.004, 12.0, 40, 1};
  send(
      response(has(source, "WRONG_ID") ? id + 100 : id, true, {{"result", kopt::to_json(result)}}));
}

}  // namespace

void cublaslt(int64_t id, const json& body) {
  std::string task = body.value("task_json", "");
  std::string reference = body.value("reference", json::object()).value("source", "");
  if (task.find("\"cublaslt\"") == std::string::npos || reference.empty()) {
    send(response(id, false, {{"error", "task.json has no \"cublaslt\" mapping"}}));
    return;
  }
  json versions = {
      {"cublasLt", "13.1.0"}, {"path", "/fake/libcublasLt.so.13"}, {"timer", "kopt-sandbox CUPTI"}};
  json rows = json::array();
  rows.push_back({{"name", "cublaslt_heuristic"},
                  {"median_us", 5345.0},
                  {"noise", 0.001},
                  {"samples", 12},
                  {"kernels", 1},
                  {"shape", "k=4096 m=8192 n=4096"},
                  {"detail", "heuristic's first of 16 algorithms"},
                  {"library_versions", versions}});
  rows.push_back({{"name", "cublaslt_autotuned"},
                  {"median_us", 5301.5},
                  {"noise", 0.001},
                  {"samples", 12},
                  {"kernels", 2},
                  {"shape", "k=4096 m=8192 n=4096"},
                  {"detail", "best of 16 heuristic algorithms (index 3)"},
                  {"library_versions", versions}});
  send(response(id, true,
                {{"result", {{"rows", rows}, {"device", {{"name", "NVIDIA H100 80GB HBM3"}}}}}}));
}

int main(int argc, char** argv) {
  std::string start = "ok";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) g_device = std::atoi(argv[++i]);
    if (arg.rfind("--start=", 0) == 0) start = arg.substr(8);
    if (arg.rfind("--version=", 0) == 0) g_version = std::atoi(arg.c_str() + 10);
  }
  if (start != "silent") send(make_hello_line());
  if (start == "fail") {
    send({{"v", g_version},
          {"id", 0},
          {"ok", false},
          {"fatal", true},
          {"error", "no NVIDIA driver: libcuda.so.1 not found (fake)"}});
    return 3;
  }
  if (start == "silent") return 4;
  if (start == "hang") sleep_forever();

  const char* alive_file = std::getenv("KOPT_FAKE_ALIVE_FILE");
  if (alive_file) std::ofstream(alive_file) << getpid() << "\n";
  std::string line;
  while (std::getline(std::cin, line)) {
    auto message = kopt::parse_message(line);
    if (!message) {
      send(response(0, false, {{"error", "malformed request: " + message.error()}}));
      continue;
    }
    ++g_requests;
    std::string op = message->body.value("op", "");
    if (op == "ping") {
      if (start == "garbage") {
        std::cout << "Segmentation fault (core dumped)\n" << std::flush;
        continue;
      }
      send(response(message->id, true, {{"device", device_info()}}));
    } else if (op == "evaluate") {
      evaluate(message->id, message->body);
    } else if (op == "cublaslt") {
      cublaslt(message->id, message->body);
    } else if (op == "shutdown") {
      if (alive_file) std::remove(alive_file);
      send(response(message->id, true));
      return 0;
    } else {
      send(response(message->id, false, {{"error", "unknown op '" + op + "'"}}));
    }
  }
  return 0;
}
