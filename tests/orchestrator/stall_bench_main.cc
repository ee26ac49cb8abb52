// kopt_stall_bench: the stalling-model scenario of issue 13 as a measurement. Runs a daemon
// (kopt_test_daemon: `kopt run` with the fake evaluator) against the fake LLM server answering as
// a model that stalls, in the OpenAI and the Anthropic shape, and prints one markdown row per run:
// LLM calls and dollars per new evaluated kernel, and what was spent after the last new kernel.
//
//   kopt_stall_bench [--before MAIN_DAEMON --before-prompts ITS_PROMPTS] [--after THIS_DAEMON]
//
// --before runs a daemon built from an older commit with a config it understands (no stall
// settings) and that commit's prompt templates; --after (default: this build's kopt_test_daemon)
// runs with the stall back-off scaled from seconds-to-minutes down to a benchmark's seconds.
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/orchestrator/stall_scenario.h"
#include "tests/support/temp_dir.h"

namespace {

int run(const std::string& label, const std::string& daemon, bool current,
        const std::string& prompts_dir) {
  // The third run: the same model, but its long answers fit in the configured 4096 tokens, so
  // that repeats, refusals and plans are what is measured.
  for (int variant : {0, 1, 2}) {
    bool anthropic = variant == 1;
    kopt::testing::StallScenario s;
    s.daemon = daemon;
    s.anthropic = anthropic;
    if (variant == 2) s.model.long_answer_tokens = 0;
    if (current) s.daemon_config = {{"stall", {{"backoff_initial_s", 0.5}, {"backoff_max_s", 4}}}};
    if (!prompts_dir.empty()) s.daemon_config["prompts_dir"] = prompts_dir;
    kopt::testing::TempDir dir;
    auto report = kopt::testing::run_stall_scenario(s, dir.path());
    if (!report) {
      std::fprintf(stderr, "kopt_stall_bench: %s\n", report.error().c_str());
      return 1;
    }
    if (report->exit_code != 0) {
      std::fprintf(stderr, "kopt_stall_bench: %s exited with %d:\n%s\n", daemon.c_str(),
                   report->exit_code, report->stderr_text.c_str());
    }
    std::string name = label + (anthropic ? ", Anthropic shape" : ", OpenAI shape") +
                       (variant == 2 ? ", no answer over 4096 tokens" : "");
    std::printf("%s\n", kopt::testing::stall_report_row(name, s, *report).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string before, before_prompts, after = KOPT_TEST_DAEMON;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--before") && i + 1 < argc) {
      before = argv[++i];
    } else if (!std::strcmp(argv[i], "--before-prompts") && i + 1 < argc) {
      before_prompts = argv[++i];
    } else if (!std::strcmp(argv[i], "--after") && i + 1 < argc) {
      after = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: kopt_stall_bench [--before DAEMON --before-prompts DIR] "
                   "[--after DAEMON]\n");
      return 2;
    }
  }
  std::printf("%s\n", kopt::testing::stall_report_header().c_str());
  if (!before.empty() && run("before (main)", before, false, before_prompts) != 0) return 1;
  return run("after (issue13)", after, true, "");
}
