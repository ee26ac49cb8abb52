// fake-llm-server: the tests' fake LLM endpoint as a program, for end-to-end runs and GPU
// machine demos without a real model. Serves the files of --replay DIR in name order, cycling
// (a "*.fault" file holds a fault name such as 429 or reset), on 127.0.0.1 only; a prompt that
// says "# Task: NAME" gets the files NN_NAME_*, with one cursor per task and model.
//
//   fake-llm-server --port 8090 --replay docs/replay/     # then: kopt run --config
//   configs/fake-server.json
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/strings.h"
#include "tests/support/fake_llm_server.h"
#include "tests/support/stalling_model.h"

namespace {

int usage(const char* why) {
  if (why) std::fprintf(stderr, "fake-llm-server: %s\n", why);
  std::fprintf(
      stderr,
      "usage: fake-llm-server [--port P] [--replay DIR] [--models A,B] [--key-env VAR]\n"
      "                       [--stall [--stall-pool N] | --healthy] [--quiet]\n"
      "  --port P      port on 127.0.0.1 (default 0: any free port, printed)\n"
      "  --replay DIR  completions to serve, one file each, in name order, cycling;\n"
      "                a prompt with \"# Task: NAME\" gets the files NN_NAME_* only,\n"
      "                with one cursor per task and model;\n"
      "                a *.fault file names a fault (429, 500, 503, reset, malformed,\n"
      "                empty, truncated_body, huge, 401, 404, 400, length, refusal,\n"
      "                tool_call)\n"
      "  --stall       answer as a model that stalls (repeats, near-repeats, cut-off\n"
      "                answers, refusals, tool calls, the same plans), writing N new\n"
      "                kernels per task (--stall-pool, default 24) from the kernels\n"
      "                of --replay DIR\n"
      "  --healthy     a fast model that never stalls: new kernels (variants of the\n"
      "                kernels of --replay DIR) for every call, no faults; for\n"
      "                measuring the daemon's own overhead (bench/daemon_idle.sh)\n"
      "  --models A,B   the models GET /v1/models lists; a completion for any other\n"
      "                model gets 404 (default: fake-model and the replay-* models of\n"
      "                configs/fake-server.json listed, every model answered)\n"
      "  --key-env VAR  answer 401 to requests whose key is not $VAR\n"
      "  without --replay every request gets the completion \"ok\"\n");
  return why ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  kopt::testing::FakeLlmServer::Options options;
  options.log_requests = true;
  // What `kopt run --config configs/fake-server.json` checks before its night starts.
  options.listed_models = {"fake-model", "replay-planner", "replay-coder", "replay-summarizer"};
  bool stall = false;
  kopt::testing::StallingModelOptions stall_options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") return usage(nullptr);
    if (arg == "--port" && has_value) {
      char* end = nullptr;
      long port = std::strtol(argv[++i], &end, 10);
      if (*end || port < 0 || port > 65535) return usage("--port needs a number in 0..65535");
      options.port = static_cast<int>(port);
    } else if (arg == "--replay" && has_value) {
      options.replay_dir = argv[++i];
    } else if (arg == "--models" && has_value) {
      options.listed_models = kopt::split(argv[++i], ',');
      options.only_listed_models = true;
    } else if (arg == "--key-env" && has_value) {
      const char* key = std::getenv(argv[++i]);
      if (!key || !*key) return usage("--key-env names a variable that is not set");
      options.required_key = key;
    } else if (arg == "--stall") {
      stall = true;
    } else if (arg == "--stall-pool" && has_value) {
      stall_options.pool_per_task = std::atoi(argv[++i]);
      if (stall_options.pool_per_task <= 0) return usage("--stall-pool needs a positive number");
    } else if (arg == "--healthy") {
      stall = true;
      stall_options.faults = false;
      stall_options.pool_per_task = 1 << 20;
    } else if (arg == "--quiet") {
      options.log_requests = false;
    } else {
      return usage(("unknown or incomplete option '" + arg + "'").c_str());
    }
  }

  if (stall) {
    if (options.replay_dir.empty())
      return usage("--stall and --healthy need --replay DIR for their kernels");
    auto model = kopt::testing::StallingModel::load(options.replay_dir, stall_options);
    if (!model) return usage(model.error().c_str());
    options.stalling = std::move(*model);
  }

  // Block the stop signals before any thread starts, so that only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = kopt::testing::FakeLlmServer::start(options);
  if (!server) {
    std::fprintf(stderr, "fake-llm-server: %s\n", server.error().c_str());
    return 1;
  }
  std::printf("fake-llm-server: listening on 127.0.0.1:%d (openai base_url %s, anthropic %s)\n",
              (*server)->port(), (*server)->openai_base_url().c_str(),
              (*server)->anthropic_base_url().c_str());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "fake-llm-server: %s, stopping after %zu requests\n",
               strsignal(signal_number), (*server)->request_count());
  (*server)->stop();
  return 0;
}
