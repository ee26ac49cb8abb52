#include "tests/support/stalling_model.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "llm/extract.h"

namespace kopt::testing {

namespace {

const char* kPlans = R"({"plans": [
  {"title": "vectorized float4 accesses", "detail": "Move four floats per access."},
  {"title": "warp-shuffle reductions", "detail": "Reduce with __shfl_xor_sync, not shared memory."},
  {"title": "more elements per thread", "detail": "ITEMS elements per thread, coalesced."}]})";
const char* kLesson =
    R"({"lesson": "The rewrite changed how many bytes each thread keeps in flight.", "tags": ["stalling-model"]})";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Variant `v` of a seed kernel: a real code difference (a constant), a scripted time that
// improves a little with each variant, and every third one wrong.
std::string variant(const std::string& seed, int v) {
  std::string out;
  for (const std::string& line : split(seed, '\n')) {
    if (starts_with(trim(line), "// test-evaluator:")) {
      auto at = line.find("time_us=");
      double base = at == std::string::npos ? 100.0 : std::atof(line.c_str() + at + 8);
      // Half the seed's time is the speed of light: far enough that no variant ends the task.
      out += v % 3 == 2
                 ? std::string("// test-evaluator: verdict=incorrect\n")
                 : "// test-evaluator: time_us=" + std::to_string(base * std::pow(0.98, v + 1)) +
                       " sol_us=" + std::to_string(base * 0.5) + "\n";
      continue;
    }
    out += line + "\n";
  }
  return out + "constexpr int kopt_variant = " + std::to_string(v + 1) + ";\n";
}

// The same kernel as a model re-sends it: kernel and variables renamed, other comments,
// another indentation.
std::string near_repeat(const std::string& kernel, size_t k) {
  std::string out = kernel;
  auto at = out.find("\"kernel\": \"");
  if (at != std::string::npos) {
    size_t start = at + 11, end = out.find('"', start);
    std::string name = out.substr(start, end - start);
    out = replace_all(out, name, name + "_r" + std::to_string(k));
  }
  out = replace_all(out, "kopt_variant", "kopt_variant_again");
  out = replace_all(out, "\n  ", "\n    ");
  return "// Rewritten for speed, as the plan asks.\n" + out;
}

std::string fenced(const std::string& kernel) { return "```cuda\n" + kernel + "```\n"; }

int64_t requested_max_tokens(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (j.is_object() && j.contains(key) && j[key].is_number_integer())
      return j[key].get<int64_t>();
  }
  return 4096;
}

}  // namespace

Result<std::unique_ptr<StallingModel>> StallingModel::load(const std::filesystem::path& replay_dir,
                                                           StallingModelOptions options) {
  std::unique_ptr<StallingModel> model(new StallingModel());
  model->options_ = options;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(replay_dir, ec)) {
    files.push_back(entry.path());
  }
  if (ec) return make_error(replay_dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    // "02_softmax_online.txt": the task is the word after the number.
    auto parts = split(file.stem().string(), '_');
    if (parts.size() < 2 || file.extension() != ".txt") continue;
    auto text = read_file(file);
    if (!text) return make_error(text.error());
    auto kernel = extract_code_block(*text, "cuda");
    // The first correct kernel of each task seeds its variants.
    if (!kernel || kernel->find("verdict=") != std::string::npos) continue;
    model->seeds_.emplace(parts[1], *kernel);
    // A task whose name has underscores (bf16_gemm) seeds from "NN_bf16_gemm.txt": the whole
    // name after the number, so a replay folder of every task's baseline (bench/
    // daemon_throughput.py) gives each task kernels of its own.
    if (parts.size() > 2)
      model->seeds_.emplace(join(std::vector<std::string>(parts.begin() + 1, parts.end()), "_"),
                            *kernel);
  }
  if (model->seeds_.empty()) return make_error(replay_dir.string() + ": no kernel to vary");
  return model;
}

FakeReply StallingModel::with_tokens(FakeReply reply, TaskScript& script, const std::string& kind) {
  if (reply.fault != FakeFault::kLengthLimit) reply.output_tokens = options_.output_tokens;
  reply.input_tokens = options_.input_tokens;
  ++stats_.calls;
  ++stats_.by_kind[kind];
  if (kind == "new") {
    script.calls_since_new = script.input_since_new = script.output_since_new = 0;
  } else {
    ++script.calls_since_new;
    script.input_since_new += reply.input_tokens;
    script.output_since_new += reply.output_tokens;
  }
  return reply;
}

// The coder's answers come in rounds of ten: seven new kernels (one of them too long for a
// 4096-token limit), one exact repeat, one near-repeat, and one refusal, tool call or empty
// answer. Once the pool is used up, the new kernels become repeats and near-repeats too.
FakeReply StallingModel::coder_answer(TaskScript& script, int64_t max_tokens, std::string& kind) {
  size_t n = script.coder_cursor;
  size_t slot = options_.faults ? n % 10 : 0;
  bool pool_left = static_cast<int>(script.written.size()) < options_.pool_per_task;
  bool wants_new = (slot != 1 && slot != 4 && slot != 6) || script.written.empty();
  if (wants_new && pool_left) {
    std::string kernel = variant(script.seed, static_cast<int>(script.written.size()));
    if (slot == 3 && max_tokens < options_.long_answer_tokens) {
      // Cut at the limit; asked the same way again, the model writes the same long answer.
      kind = "truncated";
      FakeReply cut = FakeReply::completion(fenced(kernel).substr(0, kernel.size() / 2));
      cut.fault = FakeFault::kLengthLimit;
      cut.output_tokens = max_tokens;
      return cut;
    }
    ++script.coder_cursor;
    script.written.push_back(kernel);
    ++stats_.kernels_written;
    kind = "new";
    return FakeReply::completion(fenced(kernel));
  }
  ++script.coder_cursor;
  if (slot == 6) {
    switch ((n / 10) % 3) {
      case 0:
        kind = "refusal";
        return FakeReply::failure(FakeFault::kRefusal);
      case 1:
        kind = "tool_call";
        return FakeReply::failure(FakeFault::kToolCall);
      default:
        kind = "empty";
        return FakeReply::completion("  \n");
    }
  }
  const std::string& old =
      slot == 1 ? script.written.back() : script.written[(n / 2) % script.written.size()];
  kind = slot == 1 ? "repeat" : (slot == 4 || n % 2 ? "near_repeat" : "repeat");
  return FakeReply::completion(fenced(kind == "repeat" ? old : near_repeat(old, n)));
}

FakeReply StallingModel::answer(const RecordedRequest& request) {
  std::string task = fake_request_task(request.body);
  std::lock_guard lock(mutex_);
  auto seed = seeds_.find(task);
  if (seed == seeds_.end()) seed = seeds_.begin();
  TaskScript& script = scripts_[seed->first];
  if (script.seed.empty()) script.seed = seed->second;
  std::string kind;
  if (request.body.find("## Plans already tried") != std::string::npos) {
    // Every other answer of the stalling planner is the same three plans, whatever it was told;
    // the others (and every answer of a healthy one) are new.
    std::string plans = kPlans;
    if (!options_.faults || script.planner_cursor % 2 == 0) {
      plans = replace_all(plans, "\"title\": \"",
                          "\"title\": \"round " + std::to_string(script.planner_cursor) + ": ");
    }
    ++script.planner_cursor;
    return with_tokens(FakeReply::completion(plans), script, "plans");
  }
  if (request.body.find("## The plan to implement") == std::string::npos &&
      request.body.find("## The plan being implemented") == std::string::npos) {
    return with_tokens(FakeReply::completion(kLesson), script, "lesson");
  }
  FakeReply reply = coder_answer(script, requested_max_tokens(request.body), kind);
  return with_tokens(std::move(reply), script, kind);
}

StallingModelStats StallingModel::stats() const {
  std::lock_guard lock(mutex_);
  StallingModelStats stats = stats_;
  for (const auto& [task, script] : scripts_) {
    stats.calls_after_last_new += script.calls_since_new;
    stats.input_tokens_after_last_new += script.input_since_new;
    stats.output_tokens_after_last_new += script.output_since_new;
  }
  return stats;
}

}  // namespace kopt::testing
