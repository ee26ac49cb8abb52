#include "sandbox/sanitizer_runner.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/strings.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "sandbox/kernel_file.h"
#include "sandbox/name_rules.h"
#include "sandbox/task_spec.h"

namespace kopt {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool is_executable(const fs::path& path) {
  return ::access(path.c_str(), X_OK) == 0 && !fs::is_directory(path);
}

// A fresh, empty file for one tool's report; removed by the caller.
Result<std::string> report_path() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kopt-sanitizer-XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) return make_error("mkstemp " + path + " failed");
  ::close(fd);
  return path;
}

// The candidate's kernel names, as its plan launches them: findings elsewhere are not its own.
std::vector<std::string> candidate_kernels(const EvalRequest& request) {
  std::vector<std::string> names;
  auto file = parse_kernel_file(request.candidate.source, request.candidate.origin, nullptr);
  if (!file) return names;
  for (const auto& launch : file->launches) names.push_back(launch.kernel);
  return names;
}

// The tools whose findings are one kernel's own (an access out of bounds, a shared-memory hazard,
// a barrier misused) check only the candidate's kernels: kopt's own (input fills, the task's
// reference, the output checks) took most of each tool's time (issue 35), and what they trigger is
// never the candidate's finding anyway. initcheck checks every kernel: the inputs a fill kernel
// wrote unchecked would read as never written.
bool checks_only_the_candidate(const std::string& tool) { return tool != "initcheck"; }

// A launch's kernel as it appears in its symbol: "ns::tile<64>" -> "tile" (Itanium mangling spells
// every identifier out, so the symbol of each instance contains it); empty when the name is not an
// identifier.
std::string symbol_substring(const std::string& kernel) {
  std::string name = kernel.substr(0, kernel.find_first_of("<("));
  if (auto colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  return name.size() <= 256 && is_identifier_name(name) ? name : "";
}

}  // namespace

std::vector<std::string> candidate_kernel_filter(const std::vector<std::string>& kernels) {
  std::vector<std::string> args;
  for (const auto& kernel : kernels) {
    std::string part = symbol_substring(kernel);
    if (part.empty()) return {};  // a name it cannot spell: every kernel is checked
    std::string arg = "kns=" + part;
    if (std::find(args.begin(), args.end(), arg) != args.end()) continue;
    args.push_back("--kernel-name");
    args.push_back(arg);
  }
  return args;
}

namespace {

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

// "start 1.1 s, longest step verify 21.4 s, end 12.3 s": where a tool's time went, the worker's
// start (and its evaluation's exchange) before, its exit after. A yielding lane's long units hold
// timing up (issue 35): this says which part of a tool's run they are.
std::string tool_timeline(double until_result_s, const EvalResult* result, double end_s) {
  double evaluation_s = result ? result->total_ms / 1000 : 0;
  std::string longest;
  double longest_ms = -1;
  if (result && result->phases.is_object()) {
    for (const auto& [name, value] : result->phases.items()) {
      if (name.find('.') != std::string::npos || !value.is_number()) continue;
      if (value.get<double>() <= longest_ms) continue;
      longest = name;
      longest_ms = value.get<double>();
    }
  }
  std::string text = "start " + seconds_text(std::max(0.0, until_result_s - evaluation_s));
  if (longest_ms >= 0) text += ", longest step " + longest + " " + seconds_text(longest_ms / 1000);
  return text + ", end " + seconds_text(end_s);
}

// KOPT_SANITIZER_KERNELS as set ("" when unset): the one reader of the variable. A value it does
// not know is said once (an A/B run with a typo would otherwise measure the default silently).
std::string sanitizer_kernels_setting() {
  const char* kernels = std::getenv("KOPT_SANITIZER_KERNELS");
  std::string value = kernels ? kernels : "";
  if (auto problem = sanitizer_kernels_problem(value)) {
    static std::once_flag said;
    std::call_once(said, [&] { spdlog::warn("{}", *problem); });
  }
  return value;
}

}  // namespace

std::optional<std::string> sanitizer_kernels_problem(const std::string& value) {
  if (value.empty() || value == "all" || value == "candidate" || value == "candidate-initcheck")
    return std::nullopt;
  return "KOPT_SANITIZER_KERNELS=" + one_line_text(clip_utf8(value, 60)) +
         " is none of all, candidate, candidate-initcheck: the default (candidate) holds";
}

double hang_ceiling_under_a_tool(const SanitizerOptions& options) {
  return std::max(options.verify_seconds_per_tool,
                  options.seconds_per_tool - options.verify_seconds_per_tool - 10);
}

bool sanitizer_kernels_default() { return sanitizer_kernels_setting() != "all"; }

bool sanitizer_filters_initcheck() { return sanitizer_kernels_setting() == "candidate-initcheck"; }

std::optional<std::string> find_compute_sanitizer() {
  if (const char* path = std::getenv("PATH")) {
    for (const auto& dir : split(path, ':')) {
      if (!dir.empty() && is_executable(fs::path(dir) / "compute-sanitizer"))
        return (fs::path(dir) / "compute-sanitizer").string();
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* home = std::getenv(var);
    if (home && *home && is_executable(fs::path(home) / "bin" / "compute-sanitizer"))
      return (fs::path(home) / "bin" / "compute-sanitizer").string();
  }
  if (is_executable("/usr/local/cuda/bin/compute-sanitizer"))
    return std::string("/usr/local/cuda/bin/compute-sanitizer");
  return std::nullopt;
}

namespace {

// Every shape class verification knows, in the order the sanitizer runs them under its time
// budget: the timed shape first, then the holdout shapes, then the sweep (the drawn and stress
// shapes follow in the worker). Holdouts become sweep shapes so that they come before the sweep.
json every_shape_class(const json& raw) {
  json shapes = json::array({json::object()});
  auto add = [&shapes](const json& list) {
    if (!list.is_array()) return;
    for (const auto& s : list)
      if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  };
  if (raw.contains("holdout")) add(raw["holdout"]);
  if (raw.contains("shapes")) add(raw["shapes"]);
  return shapes;
}

// Under a tool a kernel runs hundreds of times slower (racecheck on shared-memory tiles most),
// while hang detection allows 20x the trusted kernel's time: every run at a large shape was a
// `timeout` after the half-second floor, so the tool judged nothing there (issue 32's mutation
// run, 2026-11-28: racecheck 3-5 s "(the run under it: timeout)" on 12 of 20 kernels that drop a
// __syncthreads). A kernel reaches the sanitizer only after verification saw it finish at every
// shape, so here a run may take the whole verification budget; the tool's own limit
// (seconds_per_tool) stays the backstop.
void allow_slow_runs_under_a_tool(EvalOptions& o) {
  o.hang_factor = std::max(o.hang_factor, kSanitizerHangFactor);
  o.hang_floor_seconds = std::max(o.hang_floor_seconds, o.verify_budget_seconds);
}

// What every request under a tool asks, in both modes: one round of verification, no baseline,
// no timing, holdouts, kept inputs, quiet-GPU check or profile, and every buffer its own exact
// allocation (memcheck checks accesses against each allocation's size).
void one_untimed_run_under_a_tool(EvalRequest& reduced) {
  EvalOptions& o = reduced.options;
  reduced.baseline.reset();
  o.rounds = 1;
  o.time = false;
  o.check_holdout = false;
  o.reuse_inputs = false;
  o.check_gpu_quiet = false;
  o.exact_allocations = true;
  o.profile.clear();
}

}  // namespace

Result<EvalRequest> sanitizer_request(const EvalRequest& request, int64_t small_shape_bytes,
                                      double verify_budget_seconds) {
  auto task = parse_task(request.task_json, "task.json");
  if (!task) return make_error(task.error());
  json raw = parse_json_bounded(request.task_json);
  if (!raw.is_object()) return make_error("task.json is not a JSON object");
  EvalRequest reduced = request;
  EvalOptions& o = reduced.options;
  if (small_shape_bytes <= 0) {
    raw["shapes"] = every_shape_class(raw);
    raw["holdout"] = json::array();
    reduced.task_json = raw.dump();
    one_untimed_run_under_a_tool(reduced);  // the holdouts are among the shapes now
    o.verify_budget_seconds = verify_budget_seconds;
    allow_slow_runs_under_a_tool(o);
    return reduced;
  }
  if (raw.contains("shapes") && raw["shapes"].is_array() &&
      raw["shapes"].size() == task->shapes.size() && !task->shapes.empty()) {
    json kept = json::array();
    for (size_t i = 0; i < task->shapes.size(); ++i) {
      auto bytes = task->tensor_bytes(task->bind(task->shapes[i]));
      if (bytes && *bytes <= small_shape_bytes) kept.push_back(raw["shapes"][i]);
    }
    if (kept.empty()) kept.push_back(raw["shapes"][0]);
    raw["shapes"] = kept;
    reduced.task_json = raw.dump();
  }
  one_untimed_run_under_a_tool(reduced);
  o.stress = false;
  return reduced;
}

Result<EvalRequest> sanitizer_request(const EvalRequest& request, const SanitizerOptions& options) {
  auto reduced =
      sanitizer_request(request, options.small_shape_bytes, options.verify_seconds_per_tool);
  if (!reduced) return reduced;
  reduced->options.max_wall_seconds = options.seconds_per_tool;
  reduced->options.hang_ceiling_seconds = hang_ceiling_under_a_tool(options);
  if (!options.wide_round) reduced->options.wide = false;
  return reduced;
}

bool leaves_out_wide_round(const EvalRequest& request, const SanitizerOptions& options) {
  if (options.wide_round || !request.options.wide) return false;
  auto task = parse_task(request.task_json, "task.json");
  return task && task->wide_round.has_value();
}

// racecheck and synccheck take the shape classes smallest first: a race or a divergent barrier
// shows at any shape with a few tiles per block, and their cost grows with every shared-memory
// access, so small shapes first reach many shape classes within the budget (the timed shape
// first spent it all on one). memcheck and initcheck keep the timed shape and the holdouts
// first: an access past the end lives at the large shapes.
EvalRequest request_for_tool(const EvalRequest& reduced, const std::string& tool) {
  if (!takes_smallest_shapes_first(tool)) return reduced;
  return smallest_shapes_first(reduced);
}

bool takes_smallest_shapes_first(const std::string& tool) {
  return tool == "racecheck" || tool == "synccheck";
}

EvalRequest smallest_shapes_first(const EvalRequest& reduced) {
  auto task = parse_task(reduced.task_json, "task.json");
  json raw = parse_json_bounded(reduced.task_json);
  if (!task || !raw.is_object() || !raw.contains("shapes") || !raw["shapes"].is_array() ||
      raw["shapes"].size() != task->shapes.size())
    return reduced;
  std::vector<std::pair<int64_t, size_t>> by_size;
  for (size_t i = 0; i < task->shapes.size(); ++i) {
    auto bytes = task->tensor_bytes(task->bind(task->shapes[i]));
    by_size.emplace_back(bytes ? *bytes : INT64_MAX, i);
  }
  std::stable_sort(by_size.begin(), by_size.end());
  json shapes = json::array();
  for (const auto& [bytes, i] : by_size) shapes.push_back(raw["shapes"][i]);
  raw["shapes"] = shapes;
  EvalRequest ordered = reduced;
  ordered.task_json = raw.dump();
  return ordered;
}

// A finding when the run under `tool` computed wrong outputs. The candidate verified before it
// came here, and a correct kernel's outputs do not depend on the schedule or the memory layout
// beyond the tolerances: a tool that serialises warps (racecheck) makes a missing barrier fire
// (a softmax that drops the __syncthreads after reading a reduction's result, 2026-11-28, where
// racecheck itself reported nothing). A timeout, a crash or a busy GPU under the tool is the
// tool's cost, not the kernel's fault: those say nothing.
std::optional<SanitizerFinding> wrong_outputs_under_tool(const std::string& tool,
                                                         const EvalResult& result) {
  if (result.verdict != Verdict::kIncorrect && result.verdict != Verdict::kNondeterministic &&
      result.verdict != Verdict::kOutOfBounds)
    return std::nullopt;
  SanitizerFinding finding;
  finding.tool = tool;
  finding.kind = "the outputs were wrong under the tool (" + verdict_name(result.verdict) +
                 "): " + clip_utf8(result.detail, 300);
  return finding;
}

// A run under the tool that finished no shape: the candidate hung past its limit (the whole
// verification budget at least) or crashed before one shape's rounds were done, so the tool saw
// nothing of it. A kernel can do that on purpose (time itself, then spin or trap once it runs as
// slowly as a checked kernel does), and the tool's slowdown must not be a way past the tool: not
// a verdict on its code, a refusal to trust it unchecked. After a shape or more it is the tool's
// cost (the budget ran out), as before; the reference's failure is the worker's error, not this.
std::optional<SanitizerFinding> unchecked_under_tool(const std::string& tool,
                                                     const EvalResult& result) {
  if (result.verdict != Verdict::kTimeout && result.verdict != Verdict::kCrash) return std::nullopt;
  // -1: the worker never answered (the tool's wall limit): what it finished is unknown.
  if (result.shapes_verified != 0) return std::nullopt;
  SanitizerFinding finding;
  finding.tool = tool;
  finding.kind = "no shape finished under the tool (" + verdict_name(result.verdict) +
                 "): " + clip_utf8(result.detail, 300) +
                 "; a kernel the tools cannot check is not trusted";
  return finding;
}

EvalResult sanitizer_verdict(const SanitizerFinding& finding) {
  EvalResult result;
  result.verdict = Verdict::kSanitizer;
  result.detail = finding.describe();
  return result;
}

namespace {

// The request each tool runs, or nothing where the candidate is not sanitized here: `note`
// says why (no compute-sanitizer, a launcher, a task it cannot reduce).
std::optional<EvalRequest> request_to_sanitize(const EvalRequest& request,
                                               const std::string& sanitizer,
                                               const SandboxOptions& worker,
                                               const SanitizerOptions& options, std::string& note) {
  if (sanitizer.empty()) {
    note = "compute-sanitizer is not installed here; candidates are not sanitized";
    static std::once_flag said;
    std::call_once(said, [&] { spdlog::warn("{}", note); });
    return std::nullopt;
  }
  if (!worker.command_prefix.empty()) {
    note = "not sanitized: the worker starts through a launcher (" +
           join(worker.command_prefix, " ") + ")";
    return std::nullopt;
  }
  auto reduced = sanitizer_request(request, options);
  if (!reduced) {
    note = "not sanitized: " + reduced.error();
    return std::nullopt;
  }
  return std::move(*reduced);
}

// The worker started under one tool, which writes its report to `report`.
// `filter`: candidate_kernel_filter()'s options, for the tools that check only the candidate.
SandboxOptions worker_under_tool(const SandboxOptions& worker, const std::string& sanitizer,
                                 const std::string& tool, const std::string& report,
                                 const SanitizerOptions& options,
                                 const std::vector<std::string>& filter) {
  SandboxOptions run = worker;
  run.worker = sanitizer;
  run.device = -1;
  run.label = "compute-sanitizer " + tool;
  // API errors are left out: the worker probes the driver on purpose (a parameter index past
  // the last one). The print limit bounds the report of a kernel with a million hazards.
  run.extra_args = {"--tool",        tool, "--log-file",          report,
                    "--print-limit", "10", "--report-api-errors", "no"};
  if (options.candidate_kernels_only &&
      (checks_only_the_candidate(tool) || options.filter_initcheck))
    run.extra_args.insert(run.extra_args.end(), filter.begin(), filter.end());
  run.extra_args.insert(run.extra_args.end(),
                        {worker.worker, "--device", std::to_string(std::max(worker.device, 0)),
                         "--under-profiler", "--output-log", ""});
  run.extra_args.insert(run.extra_args.end(), worker.extra_args.begin(), worker.extra_args.end());
  run.start_timeout_seconds = options.seconds_per_tool;
  run.deadline_slack_seconds = 5;
  run.busy_retry_seconds = 0;
  run.exit_grace_seconds = 30;  // the tool writes its summary as the worker exits
  return run;
}

// What one tool's run came to: its part of the note, the finding in its report or in the run's
// outputs, and whether the run finished no shape at all (unchecked_under_tool's case).
struct ToolRun {
  bool ran = false;  // the tool's worker started (its report file could be made)
  std::string line;
  std::optional<SanitizerFinding> finding;
  std::optional<SanitizerFinding> unchecked;
};

// What every tool's run of one pass shares.
struct PassContext {
  const SandboxOptions& worker;
  const SanitizerOptions& options;
  const std::string& sanitizer;
  const std::vector<std::string>& kernels;
  const std::vector<std::string>& filter;
};

// The tool's report, kept in options.report_dir when there is one, then removed.
std::string take_report(const std::string& report, const std::string& tool,
                        const SanitizerOptions& options) {
  auto read = read_file(report);
  std::string text = read ? *read : "";
  std::error_code ignored;
  if (!options.report_dir.empty()) {
    fs::copy_file(
        report,
        fs::path(options.report_dir) / (tool + "-" + fs::path(report).filename().string() + ".txt"),
        fs::copy_options::overwrite_existing, ignored);
  }
  fs::remove(report, ignored);
  return text;
}

// `request` under `tool` in a worker process of its own.
ToolRun run_tool(const PassContext& pass, const std::string& tool, const EvalRequest& request) {
  auto tool_begin = std::chrono::steady_clock::now();
  ToolRun run;
  auto report = report_path();
  if (!report) {
    run.line = tool + " not run (" + report.error() + ")";
    return run;
  }
  run.ran = true;
  std::string run_under, budget;  // run_under: the run's verdict unless ok, or its error
  std::string timeline;
  {
    SandboxEvaluator evaluator(
        worker_under_tool(pass.worker, pass.sanitizer, tool, *report, pass.options, pass.filter));
    auto result = evaluator.evaluate(request);
    auto answered = std::chrono::steady_clock::now();
    if (!result)
      run_under = "error: " + result.error();
    else if (result->verdict != Verdict::kOk)
      run_under = verdict_name(result->verdict);
    if (result) run.finding = wrong_outputs_under_tool(tool, *result);
    if (result) run.unchecked = unchecked_under_tool(tool, *result);
    // "...; the verification budget of 30 s stopped it after 3 of 9 shapes" -> "3 of 9 shapes"
    const std::string mark = "stopped it after ";
    if (result && result->detail.find(mark) != std::string::npos)
      budget = result->detail.substr(result->detail.find(mark) + mark.size());
    evaluator.shutdown();
    auto since = [](auto from) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
    };
    timeline = tool_timeline(since(tool_begin) - since(answered), result ? &*result : nullptr,
                             since(answered));
  }
  std::string text = take_report(*report, tool, pass.options);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - tool_begin).count();
  run.line = tool + " " + seconds_text(seconds);
  if (!run_under.empty()) run.line += " (the run under it: " + run_under + ")";
  if (!budget.empty()) run.line += " (within its budget: " + budget + ")";
  run.line += " [" + timeline + "]";
  // racecheck writes no error summary when it finds nothing; no banner at all means no report.
  if (text.find("COMPUTE-SANITIZER") == std::string::npos) run.line += " (no report written)";
  if (auto found = first_sanitizer_finding(tool, text, pass.kernels)) run.finding = found;
  return run;
}

// One tool on the reduced request. A run that finished no shape checked nothing: under racecheck
// and synccheck (smallest shape first) that is a finding; memcheck and initcheck start at the
// timed shape, where an honest kernel can run out of time under the tool, so they run once more
// smallest shape first, and a kernel that finishes no shape then either is a finding.
ToolRun sanitize_with(const PassContext& pass, const std::string& tool,
                      const EvalRequest& reduced) {
  ToolRun run = run_tool(pass, tool, request_for_tool(reduced, tool));
  if (run.finding || !run.unchecked) return run;
  if (!takes_smallest_shapes_first(tool)) {
    ToolRun again = run_tool(pass, tool, smallest_shapes_first(reduced));
    again.line = run.line + ", again smallest shape first: " + again.line;
    run = std::move(again);
    if (run.finding || !run.unchecked) return run;
  }
  run.finding = std::move(run.unchecked);
  return run;
}

}  // namespace

SanitizerOutcome run_sanitizers(const EvalRequest& request, const SandboxOptions& worker,
                                const SanitizerOptions& options) {
  SanitizerOutcome outcome;
  std::string sanitizer = options.sanitizer;
  if (sanitizer.empty()) sanitizer = find_compute_sanitizer().value_or("");
  auto reduced = request_to_sanitize(request, sanitizer, worker, options, outcome.note);
  if (!reduced) return outcome;
  const std::vector<std::string> kernels = candidate_kernels(request);
  const std::vector<std::string> filter = candidate_kernel_filter(kernels);
  const PassContext pass{worker, options, sanitizer, kernels, filter};
  std::vector<std::string> spent;
  auto begin = std::chrono::steady_clock::now();
  for (const auto& tool : options.tools) {
    ToolRun run = sanitize_with(pass, tool, *reduced);
    spent.push_back(run.line);
    outcome.ran = outcome.ran || run.ran;
    if (run.finding) {
      outcome.finding = std::move(run.finding);
      break;
    }
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  outcome.note = "compute-sanitizer: " + join(spent, ", ");
  if (leaves_out_wide_round(request, options))
    outcome.note += "; the round past 2^31 elements is the gate's alone";
  return outcome;
}

}  // namespace kopt
