// kopt eval TASK [KERNEL.cu] [--compile-only] [--json]: the compile gate here, then the GPU
// verdict and timing from the kopt-sandbox worker (through SandboxEvaluator).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/text_escape.h"
#include "sandbox/compiler.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/evaluator.h"
#include "sandbox/kernel_file.h"
#include "sandbox/kernel_file_check.h"
#include "sandbox/sanitizer_runner.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/eval_shapes.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/options.h"
#include "src/cli/sandbox_flags.h"

namespace kopt::cli {
namespace {

std::string bytes_text(int64_t bytes) {
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

void print_timing(const char* label, const TimingSummary& t) {
  std::printf("%-10s %.2f us median, noise %.2f%%, min %.2f us (%d samples", label, t.median_us,
              100 * t.noise, t.min_us, t.samples);
  if (t.discarded) std::printf(", %d throttled discarded", t.discarded);
  std::printf(")\n");
}

// The human-readable report of one evaluation.
void print_result(const EvalResult& r, const std::string& kernel) {
  std::string device =
      r.device.is_object() && r.device.contains("name") && r.device["name"].is_string()
          ? r.device["name"].get<std::string>()
          : "the GPU";
  // The compile log, the detail and the device name can carry the candidate's own text
  // (#error, a printf): shown with visible escapes, never as terminal control sequences.
  std::printf("%-10s %s on %s\n", "kernel", terminal_text(kernel).c_str(),
              terminal_text(device).c_str());
  std::printf("%-10s %s\n", "verdict", verdict_name(r.verdict).c_str());
  if (!r.detail.empty()) std::printf("%-10s %s\n", "detail", terminal_text(r.detail).c_str());
  if (r.mismatch) {
    const Mismatch& m = *r.mismatch;
    std::printf("%-10s %s[%lld] at %s (%s, round %d): got %.9g, expected %.9g\n", "mismatch",
                terminal_text(m.output).c_str(), static_cast<long long>(m.index),
                terminal_text(m.shape).c_str(), terminal_text(m.phase).c_str(), m.round, m.actual,
                m.expected);
  }
  if (r.verdict == Verdict::kCompileError && !r.compile_log.empty()) {
    std::printf("%s\n", terminal_block_text(r.compile_log).c_str());
  }
  if (r.candidate_time) print_timing("candidate", *r.candidate_time);
  if (r.baseline_time) print_timing("baseline", *r.baseline_time);
  if (r.candidate_time && r.baseline_time && r.speedup > 0) {
    std::printf("%-10s %.3fx over the baseline\n", "speedup", r.speedup);
  }
  if (r.candidate_time && r.sol_us > 0) {
    std::printf("%-10s %.1f%% of speed of light (bound %.2f us)\n", "SOL", r.sol_percent, r.sol_us);
  }
  if (r.resources) {
    const KernelResources& k = *r.resources;
    std::printf(
        "%-10s %d registers/thread, %s local, %s static + %s dynamic shared, "
        "occupancy %.0f%%\n",
        "resources", k.registers, bytes_text(k.local_bytes).c_str(),
        bytes_text(k.static_shared_bytes).c_str(), bytes_text(k.dynamic_shared_bytes).c_str(),
        100 * k.occupancy);
  }
  if (r.profile) {
    const KernelProfile& p = *r.profile;
    std::printf("%-10s %d kernel(s), %.2f us under the profiler, %d replay passes, %.0f ms\n",
                "profile", p.kernels, p.duration_us, p.passes, p.profile_ms);
    std::printf("%-10s %s\n", "", terminal_text(describe_profile(p)).c_str());
    std::printf(
        "%-10s DRAM read %.0f B, write %.0f B; %.0f warp instructions; %.0f shared "
        "wavefronts, %.0f bank conflicts\n",
        "", p.dram_read_bytes, p.dram_write_bytes, p.instructions, p.shared_wavefronts,
        p.bank_conflicts);
    std::printf("%-10s", "stalls");
    for (size_t i = 0; i < p.stalls.size(); ++i)
      std::printf("%s %s %.1f%%", i ? "," : "",
                  terminal_text(stall_display_name(p.stalls[i].reason)).c_str(),
                  p.stalls[i].percent);
    std::printf("\n");
  }
  if (!r.profile_note.empty())
    std::printf("%-10s %s\n", "profile", terminal_text(r.profile_note).c_str());
  std::printf("%-10s compile %.0f ms%s, verify %.0f ms, time %.0f ms, total %.0f ms\n", "latency",
              r.compile_ms, r.compile_cache_hit ? " (cached)" : "", r.verify_ms, r.time_ms,
              r.total_ms);
}

Result<KernelSource> kernel_source(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return make_error(text.error());
  return KernelSource{*text, path.string(), {}};
}

// `kopt eval --sanitize`: the kernel under compute-sanitizer's tools after its evaluation
// (sandbox/sanitizer_runner.h), unless it never ran on the GPU. A finding turns an ok verdict
// into `sanitizer`; other verdicts stand, with the finding beside them.
SanitizerOutcome sanitize_after(EvalResult& result, const EvalRequest& request,
                                const SandboxOptions& worker) {
  switch (result.verdict) {
    case Verdict::kCompileError:
    case Verdict::kInvalidPlan:
    case Verdict::kGpuBusy:
      return {.note =
                  "not sanitized: the kernel did not run (" + verdict_name(result.verdict) + ")"};
    default:
      break;
  }
  SanitizerOutcome outcome = run_sanitizers(request, worker);
  if (outcome.finding && result.verdict == Verdict::kOk) {
    EvalResult found = sanitizer_verdict(*outcome.finding);
    result.verdict = found.verdict;
    result.detail = found.detail;
  }
  return outcome;
}

nlohmann::json sanitizer_json(const SanitizerOutcome& s) {
  nlohmann::json out = {{"ran", s.ran}, {"note", s.note}, {"seconds", s.seconds}};
  if (s.finding) out["finding"] = s.finding->describe();
  return out;
}

void print_sanitizer(const SanitizerOutcome& s) {
  std::printf("%-10s %s\n", "sanitizer", s.note.c_str());
  if (s.finding) std::printf("%-10s %s\n", "", s.finding->describe().c_str());
}

void add_eval_flags(cxxopts::Options& options) {
  options.add_options()("task", "task name or directory", cxxopts::value<std::string>())(
      "kernel", "kernel .cu file", cxxopts::value<std::string>())(
      "tasks", "folder of task directories", cxxopts::value<std::string>())(
      "compile-only", "stop after the compile gate (no GPU needed)")(
      "arch", "target architecture (default: the GPU's, else sm_90a)",
      cxxopts::value<std::string>()->default_value(""))("json", "print the result as JSON")(
      "seed", "seed of the random inputs (default: a fresh one per evaluation)",
      cxxopts::value<uint64_t>()->default_value("0"))(
      "rounds", "rounds of fresh random inputs per shape",
      cxxopts::value<int>()->default_value("5"))("no-time", "verify only, do not time")(
      "profile", "hardware counters of the kernel at the timed shape (CUPTI range profiler)")(
      "shapes", "then time it at every shape of the task's sweep: a table per shape")(
      "profile-bracket",
      "run the kernel once at the timed shape between cuProfilerStart/Stop, for "
      "`ncu --profile-from-start off` (set KOPT_SANDBOX_UNDER_PROFILER=1 and --no-time)")(
      "sanitize",
      "afterwards run the kernel under compute-sanitizer's memcheck, racecheck, synccheck and "
      "initcheck at every shape class (timed shape, holdouts, sweep, stress, drawn), each tool "
      "within a time budget; a finding makes an ok verdict `sanitizer`");
}

// Flags that exclude each other or are out of range: the exit code after `fail` said why.
std::optional<int> refuse_flags(const cxxopts::ParseResult& args, const CommandFailure& fail) {
  if (!args.count("task")) return fail(2, "kopt eval: missing TASK (see --help)");
  if (args.count("profile") && args.count("profile-bracket")) {
    return fail(2, "kopt eval: --profile and --profile-bracket exclude each other (see --help)");
  }
  if ((args.count("profile") || args.count("profile-bracket")) && args.count("compile-only")) {
    return fail(2,
                "kopt eval: --profile needs the GPU part of the evaluation; it cannot go with "
                "--compile-only");
  }
  if (args.count("sanitize") && args.count("compile-only"))
    return fail(2, "kopt eval: --sanitize runs the kernel on the GPU; not with --compile-only");
  if (args["rounds"].as<int>() < 1) return fail(2, "kopt eval: --rounds must be at least 1");
  if (args.count("shapes") && (args.count("compile-only") || args.count("no-time"))) {
    return fail(2,
                "kopt eval: --shapes times the kernel at each shape; it cannot go with "
                "--compile-only or --no-time");
  }
  if (args["device"].as<int>() < 0) return fail(2, "kopt eval: --device must be 0 or more");
  return std::nullopt;
}

// The plan cannot launch at some shape of the task: verdict invalid_plan, reached on the CPU.
int print_plan_refusal(const std::string& error, const std::filesystem::path& kernel_path,
                       const std::string& task, bool json_out) {
  if (json_out) {
    std::cout << dump_json(nlohmann::json{{"verdict", verdict_name(Verdict::kInvalidPlan)},
                                          {"detail", error},
                                          {"kernel", kernel_path.string()},
                                          {"task", task}},
                           2)
              << "\n";
  } else {
    std::cout << "verdict: " << verdict_name(Verdict::kInvalidPlan) << "\n"
              << terminal_block_text(error) << "\n";
  }
  return 1;
}

// `kopt eval --compile-only`, or a kernel the compile gate refused: what the gate said.
int print_compile_outcome(const CompileOutput& compiled, const std::filesystem::path& kernel_path,
                          const std::string& arch, bool json_out) {
  if (!compiled.ok) {
    if (json_out) {
      std::cout << dump_json(nlohmann::json{{"verdict", verdict_name(Verdict::kCompileError)},
                                            {"log", compiled.log}},
                             2)
                << "\n";
    } else {
      std::cout << "verdict: " << verdict_name(Verdict::kCompileError) << "\n"
                << terminal_block_text(compiled.log) << "\n";
    }
    return 1;
  }
  if (json_out) {
    std::cout << dump_json(nlohmann::json{{"verdict", "compiled"},
                                          {"arch", arch},
                                          {"cubin_bytes", compiled.cubin.size()},
                                          {"compile_ms", compiled.millis},
                                          {"cache_hit", compiled.cache_hit},
                                          {"log", compiled.log}},
                           2)
              << "\n";
  } else {
    std::printf("compiled %s for %s: %zu bytes of CUBIN, %.1f ms%s\n", kernel_path.c_str(),
                arch.c_str(), compiled.cubin.size(), compiled.millis,
                compiled.cache_hit ? " (cache hit)" : "");
  }
  return 0;
}

// What `kopt eval` prints beside the worker's result.
struct EvalExtras {
  std::string kernel;
  std::string task;
  std::optional<std::vector<ShapeTiming>> per_shape;
  std::optional<SanitizerOutcome> sanitized;
};

// The result as text or JSON, and the exit code: 0 ok, 4 the GPU was busy, else 1.
int report_eval(const EvalResult& result, const EvalExtras& extras, bool json_out) {
  if (json_out) {
    nlohmann::json out = to_json(result);
    out["kernel"] = extras.kernel;
    out["task"] = extras.task;
    if (extras.per_shape) out["shapes"] = shape_timings_json(*extras.per_shape);
    if (extras.sanitized) out["sanitizer"] = sanitizer_json(*extras.sanitized);
    std::cout << dump_json_ascii(out, 2) << "\n";
  } else {
    print_result(result, extras.kernel);
    if (extras.per_shape) print_shape_timings(*extras.per_shape);
    if (extras.sanitized) print_sanitizer(*extras.sanitized);
  }
  if (result.verdict == Verdict::kGpuBusy) {
    std::cerr << "kopt eval: WARNING: no time was taken because the GPU is shared or throttled: "
              << terminal_text(result.detail) << "\n"
              << "kopt eval: `kopt doctor` lists what runs on each GPU\n";
    return 4;
  }
  return result.verdict == Verdict::kOk ? 0 : 1;
}

}  // namespace

int run_eval(int argc, char** argv) {
  cxxopts::Options options("kopt eval",
                           "compile, verify and time a kernel file against a task (the task's "
                           "baseline when no file is given); exit 0 only for a verdict of ok");
  add_eval_flags(options);
  add_sandbox_flags(options);
  add_positionals(options, {"task", "kernel"}, "TASK [KERNEL.cu]");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  bool json_out = args->count("json") > 0;
  CommandFailure fail{json_out};
  if (std::optional<int> refused = refuse_flags(*args, fail)) return *refused;
  std::filesystem::path root = args->count("tasks")
                                   ? std::filesystem::path((*args)["tasks"].as<std::string>())
                                   : default_tasks_root();
  auto dir = resolve_task_dir((*args)["task"].as<std::string>(), root);
  if (!dir) return fail(2, "kopt eval: " + dir.error());
  auto task = load_task(*dir);
  if (!task) return fail(2, task.error());
  if (auto formulas = check_task_formulas(*task); !formulas) return fail(2, formulas.error());
  std::filesystem::path kernel_path =
      args->count("kernel") ? std::filesystem::path((*args)["kernel"].as<std::string>())
                            : *dir / "baseline.cu";
  auto file = load_kernel_file(kernel_path, &*task);
  if (!file) return fail(2, file.error());
  // The plan at every shape of the task, on the CPU: the worker would refuse it at the first
  // shape where it cannot launch, with the GPU held for nothing.
  if (auto plan = check_plan_variants(*file, *task); !plan)
    return print_plan_refusal(plan.error(), kernel_path, task->name, json_out);
  std::string requested_arch = (*args)["arch"].as<std::string>();
  std::string arch = requested_arch;
  if (arch.empty()) arch = detect_gpu_arch().value_or("sm_90a");
  CompileCache cache(cache_directory() / "compile");
  auto compiled = compile_confined(make_compile_request(*file, {}, arch), &cache);
  if (!compiled) return fail(1, "kopt eval: " + compiled.error());
  if (!compiled->ok || args->count("compile-only"))
    return print_compile_outcome(*compiled, kernel_path, arch, json_out);

  // The GPU part: reference, candidate and (unless the candidate is the baseline itself) the
  // baseline, timed interleaved in one worker.
  EvalRequest request;
  request.task_json = task->raw_json;
  auto reference = kernel_source(*dir / "reference.cu");
  if (!reference) return fail(2, "kopt eval: " + reference.error());
  request.reference = std::move(*reference);
  request.candidate = {file->source, kernel_path.string(), {}};
  std::error_code same_error;
  if (!std::filesystem::equivalent(kernel_path, *dir / "baseline.cu", same_error)) {
    auto baseline = kernel_source(*dir / "baseline.cu");
    if (!baseline) return fail(2, "kopt eval: " + baseline.error());
    request.baseline = std::move(*baseline);
  }
  request.options.arch = requested_arch;
  request.options.seed = (*args)["seed"].as<uint64_t>();
  request.options.rounds = (*args)["rounds"].as<int>();
  request.options.time = !args->count("no-time");
  if (args->count("profile")) request.options.profile = "cupti";
  if (args->count("profile-bracket")) request.options.profile = "bracket";
  SandboxEvaluator evaluator(sandbox_options_from(*args));
  auto result = evaluator.evaluate(request);
  // No verdict at all: no GPU, no worker binary, a worker of another version.
  if (!result) return fail(3, "kopt eval: " + result.error());
  std::optional<std::vector<ShapeTiming>> per_shape;
  if (args->count("shapes") && result->verdict == Verdict::kOk) {
    auto rows = time_each_shape(evaluator, request);
    if (!rows) return fail(3, "kopt eval --shapes: " + rows.error());
    per_shape = std::move(*rows);
  }
  std::optional<SanitizerOutcome> sanitized;
  if (args->count("sanitize")) {
    evaluator.shutdown();  // the tools' worker gets the GPU and its memory alone
    sanitized = sanitize_after(*result, request, sandbox_options_from(*args));
  }
  return report_eval(*result, EvalExtras{kernel_path.string(), task->name, per_shape, sanitized},
                     json_out);
}

}  // namespace kopt::cli
