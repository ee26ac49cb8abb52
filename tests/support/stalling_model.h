// A model that stalls, as seen on a real endpoint overnight (issue 13): the fake server's
// stalling mode. Per task it can write a pool of distinct kernels (variants of the task's first
// correct replay kernel, some of them wrong), and while doing so it also repeats kernels it
// already wrote, re-sends them renamed and re-indented, cuts long answers at the token limit,
// refuses, calls tools and answers with nothing. Once its pool is used up it only repeats
// itself. Every other answer of its planner is the same three plans. Answers follow one cursor per
// task and agent, so what a task's coder sees does not depend on how the daemon interleaves its
// jobs; the daemon's reactions (a larger max_tokens, a nudge) change what it gets only as they
// would with a real model: a long answer fits once the limit is large enough.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::testing {

struct StallingModelOptions {
  // Distinct kernels the model can write per task before it only repeats itself; with no
  // faults and a large pool it is a healthy model.
  int pool_per_task = 24;
  bool faults = true;  // repeats, near-repeats, truncation, refusals, tool calls, empty answers
  // The long answers need this many tokens: asked with a smaller max_tokens, they are cut.
  int long_answer_tokens = 6000;
  int64_t input_tokens = 3000;  // reported per call
  int64_t output_tokens = 1500;
};

// What the model served, for the bench. The calls of a task after the last new kernel the model
// wrote for it are what a stalled search paid for, whatever stalled it (repeats once the pool is
// used up, or one long answer cut again and again).
struct StallingModelStats {
  int64_t calls = 0;
  int64_t calls_after_last_new = 0;
  int64_t input_tokens_after_last_new = 0;
  int64_t output_tokens_after_last_new = 0;
  int64_t kernels_written = 0;             // distinct kernels handed out, all tasks
  std::map<std::string, int64_t> by_kind;  // "new", "repeat", "near_repeat", "truncated", ...
};

class StallingModel {
 public:
  // Reads the task kernels from the replay directory (files NN_TASK_*.txt).
  static Result<std::unique_ptr<StallingModel>> load(const std::filesystem::path& replay_dir,
                                                     StallingModelOptions options);

  FakeReply answer(const RecordedRequest& request);
  StallingModelStats stats() const;

 private:
  struct TaskScript {
    std::string seed;                  // the kernel the variants come from
    std::vector<std::string> written;  // variants handed out, in order
    size_t coder_cursor = 0;
    size_t planner_cursor = 0;
    int64_t calls_since_new = 0, input_since_new = 0, output_since_new = 0;
  };

  StallingModel() = default;
  FakeReply coder_answer(TaskScript& script, int64_t max_tokens, std::string& kind);
  FakeReply with_tokens(FakeReply reply, TaskScript& script, const std::string& kind);

  StallingModelOptions options_;
  std::map<std::string, std::string> seeds_;  // by task
  mutable std::mutex mutex_;
  std::map<std::string, TaskScript> scripts_;  // by task
  StallingModelStats stats_;
};

}  // namespace kopt::testing
