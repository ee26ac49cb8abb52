// Reading compute-sanitizer's reports (sandbox/sanitizer_report.h), the `sanitizer` verdict, the
// request the sanitizer runs, and the runner end to end against a stand-in compute-sanitizer
// (fake_compute_sanitizer.sh) that writes a recorded report and runs the stand-in worker. The
// reports below are written here in the tool's format; the gpu label runs the real tool.
#include "sandbox/sanitizer_report.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/files.h"
#include "common/verdict.h"
#include "sandbox/compiler.h"
#include "sandbox/evaluator.h"
#include "sandbox/sanitizer_runner.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

const char* kMemcheck = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at axpy+0x1d0 in /tmp/kopt/candidate.cu:16
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f3c4a5cd000 is out of bounds
=========     and is 1,887,437 bytes after the nearest allocation at 0x7f3c4a000000 of size 4,325,376 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f2a6f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
)";

const char* kRacecheck = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at transpose_tiled+0x2a0 in /tmp/kopt/candidate.cu:22
=========     and Read access at transpose_tiled+0x3c0 in /tmp/kopt/candidate.cu:27 [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

const char* kSynccheck = R"(========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at void reduce<256>(float const*, float*, int)+0x70 in /tmp/kopt/candidate.cu:12
=========     by thread (32,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
)";

// A finding in kopt's own kernel first (not the candidate's business), then the candidate's, in
// the older "at 0xOFFSET in FILE:LINE:KERNEL" form.
const char* kInitcheck = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at fill_normal<float>(float*, unsigned long long)+0x100 in kopt_support.cu:44
=========     by thread (0,0,0) in block (0,0,0)
=========
========= Uninitialized __global__ memory read of size 8 bytes
=========     at 0x80 in /tmp/kopt/candidate.cu:9:reads_scratch(float*)
=========     by thread (1,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 2 errors
)";

const char* kClean = R"(========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 0 errors
)";

TEST(SanitizerReport, MemcheckFindingNamesKindKernelAndLine) {
  auto finding = first_sanitizer_finding("memcheck", kMemcheck, {"axpy"});
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kind, "Invalid __global__ write of size 4 bytes");
  EXPECT_EQ(finding->kernel, "axpy");
  EXPECT_EQ(finding->location, "candidate.cu:16");
  EXPECT_EQ(finding->describe(),
            "memcheck: Invalid __global__ write of size 4 bytes in axpy at candidate.cu:16");
  EXPECT_EQ(sanitizer_error_count(kMemcheck), 1);
}

TEST(SanitizerReport, RacecheckFindingNamesBothAccesses) {
  auto finding = first_sanitizer_finding("racecheck", kRacecheck, {"transpose_tiled"});
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kind, "Race reported between Write access and Read access");
  EXPECT_EQ(finding->kernel, "transpose_tiled");
  EXPECT_EQ(finding->location, "candidate.cu:22");
}

// Seen on the H100 (2026-11-27): with many hazards racecheck says it stopped counting before it
// reports the first one; that note is not the finding.
TEST(SanitizerReport, RacecheckHazardLimitNoteIsNotTheFinding) {
  std::string report = std::string("========= COMPUTE-SANITIZER\n") +
                       "========= Warning: Maximum number of hazards reached. Environment variable "
                       "NV_COMPUTE_SANITIZER_MAX_RACECHECK_HAZARDS can be used to increase this "
                       "count.\n" +
                       (kRacecheck + std::string(kRacecheck).find('\n') + 1);
  auto finding = first_sanitizer_finding("racecheck", report, {"transpose_tiled"});
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->kernel, "transpose_tiled");
  EXPECT_EQ(finding->location, "candidate.cu:22");
}

TEST(SanitizerReport, TemplateInstanceMatchesItsKernelName) {
  auto finding = first_sanitizer_finding("synccheck", kSynccheck, {"reduce"});
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kind, "Barrier error detected. Divergent thread(s) in block");
  EXPECT_EQ(finding->kernel, "reduce<256>");
  EXPECT_EQ(finding->location, "candidate.cu:12");
}

TEST(SanitizerReport, FindingsInOtherKernelsAreSkipped) {
  auto finding = first_sanitizer_finding("initcheck", kInitcheck, {"reads_scratch"});
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kernel, "reads_scratch");
  EXPECT_EQ(finding->location, "candidate.cu:9");
  EXPECT_EQ(finding->kind, "Uninitialized __global__ memory read of size 8 bytes");
  // Only kopt's own kernel: no finding against the candidate.
  EXPECT_FALSE(first_sanitizer_finding("memcheck", kMemcheck, {"other"}).has_value());
  // No list of kernels: any finding counts.
  EXPECT_EQ(first_sanitizer_finding("initcheck", kInitcheck, {})->kernel, "fill_normal<float>");
}

TEST(SanitizerReport, ApiErrorsBannersAndEmptyReportsAreNoFinding) {
  EXPECT_FALSE(first_sanitizer_finding("memcheck", kClean, {"axpy"}).has_value());
  EXPECT_EQ(sanitizer_error_count(kClean), 0);
  EXPECT_FALSE(first_sanitizer_finding("memcheck", "", {"axpy"}).has_value());
  EXPECT_FALSE(sanitizer_error_count("========= COMPUTE-SANITIZER\n").has_value());
  // The program's own lines in the same stream are not the tool's.
  EXPECT_FALSE(
      first_sanitizer_finding("memcheck", "Invalid __global__ write at axpy+0x1 in a.cu:1\n", {})
          .has_value());
}

TEST(SanitizerReport, FindingWithoutLocationStillNamesTheKernel) {
  auto finding = first_sanitizer_finding(
      "memcheck",
      "========= Invalid __shared__ read of size 4 bytes\n=========     at 0x90 in axpy\n",
      {"axpy"});
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->kernel, "axpy");
  EXPECT_EQ(finding->location, "");
  EXPECT_EQ(finding->describe(), "memcheck: Invalid __shared__ read of size 4 bytes in axpy");
}

TEST(SanitizerVerdict, HasItsNameBothWays) {
  EXPECT_EQ(verdict_name(Verdict::kSanitizer), "sanitizer");
  EXPECT_EQ(parse_verdict("sanitizer"), Verdict::kSanitizer);
  SanitizerFinding finding{"racecheck", "Race", "k", "c.cu:3"};
  EvalResult result = sanitizer_verdict(finding);
  EXPECT_EQ(result.verdict, Verdict::kSanitizer);
  EXPECT_EQ(result.detail, "racecheck: Race in k at c.cu:3");
  auto back = eval_result_from_json(to_json(result));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->verdict, Verdict::kSanitizer);
}

EvalRequest transpose_request() {
  EvalRequest request;
  request.task_json =
      *read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/transpose/task.json");
  request.reference = {"// reference", "reference.cu", {}};
  request.baseline = KernelSource{"// baseline", "baseline.cu", {}};
  request.candidate = {"// candidate", "candidate.cu", {}};
  request.options.profile = "cupti";
  return request;
}

TEST(SanitizerRequest, KeepsTheSmallSweepShapesAndOnlyVerifiesOnce) {
  auto reduced = sanitizer_request(transpose_request(), int64_t(64) << 20);
  ASSERT_TRUE(reduced.ok()) << reduced.error();
  auto task = parse_task(reduced->task_json, "reduced");
  ASSERT_TRUE(task.ok()) << task.error();
  // 1x1, 1x4097, 4097x1, 1023x33 stay; 4096x11008 (360 MB) and the 8192x8192 default go.
  ASSERT_EQ(task->shapes.size(), 4u);
  EXPECT_EQ(task->bind(task->shapes[3]).at("rows"), 1023);
  EXPECT_FALSE(reduced->baseline.has_value());
  EXPECT_EQ(reduced->options.rounds, 1);
  EXPECT_FALSE(reduced->options.time);
  EXPECT_FALSE(reduced->options.check_holdout);
  EXPECT_FALSE(reduced->options.stress);
  EXPECT_FALSE(reduced->options.reuse_inputs);
  EXPECT_TRUE(reduced->options.exact_allocations);
  EXPECT_TRUE(reduced->options.profile.empty());
  // Even a limit below every shape keeps the first one.
  auto tiny = sanitizer_request(transpose_request(), 1);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(parse_task(tiny->task_json, "tiny")->shapes.size(), 1u);
}

// The sanitizer looks where bugs live: every shape class, the timed shape first and the holdouts
// next (they become sweep shapes, so they come before the sweep), bounded by time, not bytes.
TEST(SanitizerRequest, RunsEveryShapeClassTimedAndHoldoutFirstWithinATimeBudget) {
  auto reduced = sanitizer_request(transpose_request(), 0, 30);
  ASSERT_TRUE(reduced.ok()) << reduced.error();
  auto task = parse_task(reduced->task_json, "reduced");
  ASSERT_TRUE(task.ok()) << task.error();
  // {} (8192x8192, the timed shape), 32000x4096, 12345x4099, then the five other sweep shapes.
  ASSERT_EQ(task->shapes.size(), 8u);
  EXPECT_EQ(task->bind(task->shapes[0]).at("rows"), 8192);
  EXPECT_EQ(task->bind(task->shapes[1]).at("rows"), 32000);
  EXPECT_EQ(task->bind(task->shapes[2]).at("cols"), 4099);
  EXPECT_EQ(task->bind(task->shapes[7]).at("cols"), 11008);
  EXPECT_TRUE(task->holdout.empty());
  EXPECT_FALSE(reduced->options.check_holdout);
  EXPECT_TRUE(reduced->options.stress);
  EXPECT_TRUE(reduced->options.draws);
  EXPECT_EQ(reduced->options.rounds, 1);
  EXPECT_FALSE(reduced->options.time);
  EXPECT_FALSE(reduced->options.reuse_inputs);
  // Every buffer its own exact allocation: memcheck sees an access past any buffer's end.
  EXPECT_TRUE(reduced->options.exact_allocations);
  EXPECT_FALSE(transpose_request().options.exact_allocations);
  EXPECT_FALSE(reduced->baseline.has_value());
  EXPECT_DOUBLE_EQ(reduced->options.verify_budget_seconds, 30);
  // The runner's default is this mode.
  EXPECT_EQ(SanitizerOptions{}.small_shape_bytes, 0);
  // A run under a tool is hundreds of times slower: hang detection must not call it a timeout.
  EXPECT_GE(reduced->options.hang_factor, kSanitizerHangFactor);
  EXPECT_GE(reduced->options.hang_floor_seconds, 30);
  // A run that starts by the end of the verification budget times out within the tool's wall
  // limit, so the worker answers and says what finished.
  SanitizerOptions tool;
  double ceiling = hang_ceiling_under_a_tool(tool);
  EXPECT_GE(ceiling, tool.verify_seconds_per_tool);
  EXPECT_LE(tool.verify_seconds_per_tool + ceiling + 10, tool.seconds_per_tool);
}

// A pass beside a timer leaves the round past 2^31 elements to the gate (it would hold the GPU's
// wide-round turn for seconds under a tool); every other pass keeps it. Both get the tool's limits.
TEST(SanitizerRequest, APassBesideATimerLeavesTheWideRoundToTheGate) {
  ASSERT_TRUE(transpose_request().options.wide);
  SanitizerOptions whole;
  auto kept = sanitizer_request(transpose_request(), whole);
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_TRUE(kept->options.wide);
  EXPECT_DOUBLE_EQ(kept->options.max_wall_seconds, whole.seconds_per_tool);
  EXPECT_DOUBLE_EQ(kept->options.hang_ceiling_seconds, hang_ceiling_under_a_tool(whole));
  EXPECT_DOUBLE_EQ(kept->options.verify_budget_seconds, whole.verify_seconds_per_tool);
  SanitizerOptions beside;
  beside.wide_round = false;
  auto left = sanitizer_request(transpose_request(), beside);
  ASSERT_TRUE(left.ok()) << left.error();
  EXPECT_FALSE(left->options.wide);
  EXPECT_EQ(left->task_json, kept->task_json);  // every other shape class stays
  // What the pass's note says: only a round the request would have run is left out.
  EXPECT_TRUE(leaves_out_wide_round(transpose_request(), beside));
  EXPECT_FALSE(leaves_out_wide_round(transpose_request(), whole));
  EvalRequest narrow = transpose_request();
  narrow.options.wide = false;
  EXPECT_FALSE(leaves_out_wide_round(narrow, beside));
  EvalRequest no_round = transpose_request();
  auto raw = nlohmann::json::parse(no_round.task_json);
  ASSERT_EQ(raw.erase("wide_round"), 1u);
  no_round.task_json = raw.dump();
  EXPECT_FALSE(leaves_out_wide_round(no_round, beside));
}

// racecheck and synccheck run the small shapes first (their cost grows with every shared-memory
// access); memcheck and initcheck keep the timed shape first (past-the-end bugs live there).
TEST(SanitizerRequest, RacecheckRunsTheSmallestShapesFirstMemcheckTheTimedShape) {
  auto reduced = sanitizer_request(transpose_request(), 0, 30);
  ASSERT_TRUE(reduced.ok()) << reduced.error();
  auto sizes = [](const EvalRequest& request) {
    auto task = parse_task(request.task_json, "ordered");
    std::vector<int64_t> bytes;
    for (const auto& shape : task->shapes) bytes.push_back(*task->tensor_bytes(task->bind(shape)));
    return bytes;
  };
  for (const char* tool : {"racecheck", "synccheck"}) {
    auto ordered = sizes(request_for_tool(*reduced, tool));
    ASSERT_EQ(ordered.size(), 8u) << tool;
    EXPECT_TRUE(std::is_sorted(ordered.begin(), ordered.end())) << tool;
  }
  for (const char* tool : {"memcheck", "initcheck"}) {
    auto task = parse_task(request_for_tool(*reduced, tool).task_json, "as given");
    EXPECT_EQ(task->bind(task->shapes[0]).at("rows"), 8192) << tool;
  }
}

// The filter must name a substring of every symbol the candidate's kernels get (the tool matches
// mangled names): real NVRTC lowers an extern "C" kernel, a C++ one and a namespaced template.
TEST(SanitizerKernelFilter, NamesASubstringOfEverySymbolNvrtcMakes) {
  CompileRequest request;
  request.source = R"(extern "C" __global__ void c_kernel(float* x) { x[0] = 1; }
__global__ void plain(float* x, int n) { x[n] = 2; }
namespace ns { template <int B> __global__ void tile(float* x) { x[B] = 3; } }
template __global__ void ns::tile<64>(float*);
template __global__ void ns::tile<128>(float*);
)";
  request.origin = "candidate.cu";
  request.kernel_names = {"c_kernel", "plain", "ns::tile<64>", "ns::tile<128>"};
  auto out = compile_kernel(request, nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_TRUE(out->ok) << out->log;
  std::vector<std::string> filter = candidate_kernel_filter(request.kernel_names);
  EXPECT_EQ(filter, (std::vector<std::string>{"--kernel-name", "kns=c_kernel", "--kernel-name",
                                              "kns=plain", "--kernel-name", "kns=tile"}));
  for (const auto& [name, symbol] : out->lowered_names) {
    bool matched = false;
    for (size_t i = 1; i < filter.size(); i += 2)
      matched = matched || symbol.find(filter[i].substr(4)) != std::string::npos;
    EXPECT_TRUE(matched) << name << " -> " << symbol;
  }
  EXPECT_NE(out->lowered_names.at("plain"), "plain");  // mangled: the substring is what matches
  // A name it cannot spell as an identifier: no filter, every kernel is checked.
  EXPECT_TRUE(candidate_kernel_filter({"plain", "bad name"}).empty());
  EXPECT_TRUE(candidate_kernel_filter({"9lives"}).empty());
}

// The runner against a stand-in compute-sanitizer: it writes the recorded report of the tool
// named in KOPT_FAKE_SANITIZER_FINDS and runs the stand-in worker, which answers ok.
class SanitizerRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per test process: ctest runs these tests as concurrent processes, and a shared
    // path let one's SetUp truncate the report while another's fake tool was copying it (CI).
    report_ = std::filesystem::path(::testing::TempDir()) /
              ("recorded_racecheck." + std::to_string(::getpid()) + ".txt");
    std::ofstream(report_) << kRacecheck;
    ::setenv("KOPT_FAKE_SANITIZER_REPORT", report_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KOPT_FAKE_SANITIZER_FINDS");
    std::filesystem::remove(report_);
  }

  SanitizerOutcome run(const std::string& candidate_source) {
    EvalRequest request = transpose_request();
    request.candidate.source = candidate_source;
    SandboxOptions worker;
    worker.worker = KOPT_FAKE_WORKER;
    worker.device = 0;
    options_.sanitizer = KOPT_FAKE_SANITIZER;
    options_.seconds_per_tool = 20;
    return run_sanitizers(request, worker, options_);
  }

  std::filesystem::path report_;
  SanitizerOptions options_;
};

const char* kTiledSource = R"(/* kopt:plan
{"launches": [{"kernel": "transpose_tiled", "grid": [16], "block": [32, 8],
               "args": ["x", "out", "rows", "cols"]}]}
*/
extern "C" __global__ void transpose_tiled(const float* x, float* out, int rows, int cols) {}
)";

TEST_F(SanitizerRunner, StopsAtTheFirstToolWithAFindingInTheCandidate) {
  ::setenv("KOPT_FAKE_SANITIZER_FINDS", "racecheck", 1);
  SanitizerOutcome outcome = run(kTiledSource);
  EXPECT_TRUE(outcome.ran) << outcome.note;
  ASSERT_TRUE(outcome.finding.has_value()) << outcome.note;
  EXPECT_EQ(outcome.finding->describe(),
            "racecheck: Race reported between Write access and Read access in transpose_tiled at "
            "candidate.cu:22");
  // memcheck ran first and found nothing; synccheck and initcheck never ran.
  EXPECT_NE(outcome.note.find("memcheck"), std::string::npos) << outcome.note;
  EXPECT_EQ(outcome.note.find("synccheck"), std::string::npos) << outcome.note;
}

TEST_F(SanitizerRunner, APassWithoutTheWideRoundSaysSo) {
  EXPECT_EQ(run(kTiledSource).note.find("2^31"), std::string::npos);
  options_.wide_round = false;
  SanitizerOutcome outcome = run(kTiledSource);
  EXPECT_FALSE(outcome.finding.has_value()) << outcome.note;
  EXPECT_NE(outcome.note.find("the round past 2^31 elements is the gate's alone"),
            std::string::npos)
      << outcome.note;
}

TEST_F(SanitizerRunner, CleanReportsAreNoFinding) {
  SanitizerOutcome outcome = run(kTiledSource);
  EXPECT_TRUE(outcome.ran);
  EXPECT_FALSE(outcome.finding.has_value()) << outcome.finding->describe();
  EXPECT_NE(outcome.note.find("initcheck"), std::string::npos) << outcome.note;
  // Each tool says where its time went: the worker's start and its end (and its longest step,
  // which the real worker names: this fake one names none).
  for (const char* part : {" s [start ", ", end "})
    EXPECT_NE(outcome.note.find(part), std::string::npos) << part << " in " << outcome.note;
}

TEST_F(SanitizerRunner, AFindingInAnotherKernelIsNotTheCandidates) {
  ::setenv("KOPT_FAKE_SANITIZER_FINDS", "racecheck", 1);
  std::string source = kTiledSource;
  for (auto* from : {"transpose_tiled", "transpose_tiled"})
    source.replace(source.find(from), std::string(from).size(), "transpose_other");
  SanitizerOutcome outcome = run(source);
  EXPECT_FALSE(outcome.finding.has_value()) << outcome.finding->describe();
}

// End to end: every run crashes before any shape finished (the stand-in worker answers FATAL:
// crash, no shape verified). memcheck starts at the timed shape, so it runs once more smallest
// shape first; checking nothing there too, the pass stops with a finding. The twin that answers
// ok passes (CleanReportsAreNoFinding).
TEST_F(SanitizerRunner, ARunThatChecksNothingUnderAToolIsAFinding) {
  SanitizerOutcome outcome = run(std::string(kTiledSource) + "// FATAL\n");
  EXPECT_TRUE(outcome.ran) << outcome.note;
  ASSERT_TRUE(outcome.finding.has_value()) << outcome.note;
  EXPECT_EQ(outcome.finding->tool, "memcheck");
  EXPECT_NE(outcome.finding->describe().find("no shape finished under the tool (crash)"),
            std::string::npos)
      << outcome.finding->describe();
  EXPECT_NE(outcome.note.find("again smallest shape first: memcheck"), std::string::npos)
      << outcome.note;
  EXPECT_EQ(outcome.note.find("racecheck"), std::string::npos) << outcome.note;
}

// A kernel that finishes nothing at the timed shape under memcheck but finishes its shapes
// smallest first (an honest kernel a tool slows past its limit at a large shape) is checked
// there and passes; the note says both runs.
TEST_F(SanitizerRunner, NoShapeAtTheTimedShapeIsRunAgainSmallestFirst) {
  auto once =
      std::filesystem::path(::testing::TempDir()) / ("crashed-once." + std::to_string(::getpid()));
  std::filesystem::remove(once);
  SanitizerOutcome outcome =
      run(std::string(kTiledSource) + "// FATAL_ONCE " + once.string() + "\n");
  std::filesystem::remove(once);
  EXPECT_FALSE(outcome.finding.has_value()) << outcome.finding->describe();
  EXPECT_NE(outcome.note.find("memcheck "), std::string::npos) << outcome.note;
  EXPECT_NE(outcome.note.find("(the run under it: crash)"), std::string::npos) << outcome.note;
  EXPECT_NE(outcome.note.find("again smallest shape first: memcheck"), std::string::npos)
      << outcome.note;
  EXPECT_NE(outcome.note.find("initcheck"), std::string::npos) << outcome.note;
}

// KOPT_SANITIZER_KERNELS: the values kopt knows pass; any other is said (one line, clipped), so
// an A/B run with a typo does not measure the default unawares.
TEST(SanitizerKernelsSetting, AnUnknownValueIsSaidOnOneLine) {
  for (const char* known : {"", "all", "candidate", "candidate-initcheck"})
    EXPECT_FALSE(sanitizer_kernels_problem(known)) << known;
  auto problem = sanitizer_kernels_problem("al\nl");
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("KOPT_SANITIZER_KERNELS=al l is none of all, candidate"),
            std::string::npos)
      << *problem;
  EXPECT_EQ(problem->find('\n'), std::string::npos);
  EXPECT_LT(sanitizer_kernels_problem(std::string(5000, 'x'))->size(), 200u);
}

// memcheck, racecheck and synccheck check the candidate's kernels alone (kopt's fills, checks and
// the reference ran most of their time); initcheck checks every kernel (an unchecked fill's
// writes would read as uninitialised); KOPT_SANITIZER_KERNELS=all checks every kernel everywhere.
TEST_F(SanitizerRunner, ToolsOfOneKernelCheckOnlyTheCandidatesKernels) {
  auto filters = std::filesystem::path(::testing::TempDir()) /
                 ("filters." + std::to_string(::getpid()) + ".txt");
  ::setenv("KOPT_FAKE_SANITIZER_FILTERS", filters.c_str(), 1);
  // {candidate_kernels_only, filter_initcheck (bench/sanitizer_cost.py's experiment)}
  for (auto [only, initcheck_too] : {std::pair{true, false}, {false, false}, {true, true}}) {
    std::filesystem::remove(filters);
    options_.candidate_kernels_only = only;
    options_.filter_initcheck = initcheck_too;
    SanitizerOutcome outcome = run(kTiledSource);
    EXPECT_TRUE(outcome.ran) << outcome.note;
    auto lines = read_file(filters);
    ASSERT_TRUE(lines.ok()) << lines.error();
    const std::string filter = only ? " kns=transpose_tiled" : "";
    EXPECT_EQ(*lines, "memcheck:" + filter + "\nracecheck:" + filter + "\nsynccheck:" + filter +
                          "\ninitcheck:" + (initcheck_too ? filter : "") + "\n");
  }
  ::unsetenv("KOPT_FAKE_SANITIZER_FILTERS");
  std::filesystem::remove(filters);
}

TEST(SanitizerRunnerWithoutTool, SaysSoAndRunsNothing) {
  SandboxOptions worker;
  worker.worker = KOPT_FAKE_WORKER;
  SanitizerOptions options;
  options.sanitizer = "";
  std::string saved = ::getenv("PATH") ? ::getenv("PATH") : "";
  // Restored after: later tests of this process find the toolkit through CUDA_HOME.
  std::optional<std::string> saved_cuda_home;
  if (const char* v = ::getenv("CUDA_HOME")) saved_cuda_home = v;
  ::setenv("PATH", "/nonexistent", 1);
  ::setenv("CUDA_HOME", "/nonexistent", 1);
  auto found = find_compute_sanitizer();
  SanitizerOutcome outcome;
  if (!found) outcome = run_sanitizers(transpose_request(), worker, options);
  ::setenv("PATH", saved.c_str(), 1);
  if (saved_cuda_home)
    ::setenv("CUDA_HOME", saved_cuda_home->c_str(), 1);
  else
    ::unsetenv("CUDA_HOME");
  if (found) GTEST_SKIP() << "this machine has " << *found;
  EXPECT_FALSE(outcome.ran);
  EXPECT_FALSE(outcome.finding.has_value());
  EXPECT_NE(outcome.note.find("not installed"), std::string::npos) << outcome.note;
}

// A kernel whose outputs are wrong under a tool (racecheck serialises warps, so a missing barrier
// fires) is a finding; the tool's own cost (a timeout, a crash, a busy GPU) is not.
TEST(SanitizerRun, WrongOutputsUnderAToolAreAFindingItsTimeoutsAreNot) {
  EvalResult result;
  result.detail = "3 of 4096 elements of 'y' are outside atol";
  for (Verdict wrong : {Verdict::kIncorrect, Verdict::kNondeterministic, Verdict::kOutOfBounds}) {
    result.verdict = wrong;
    auto finding = wrong_outputs_under_tool("racecheck", result);
    ASSERT_TRUE(finding.has_value()) << verdict_name(wrong);
    EXPECT_EQ(finding->tool, "racecheck");
    EXPECT_NE(finding->describe().find("outside atol"), std::string::npos);
  }
  for (Verdict cost : {Verdict::kOk, Verdict::kTimeout, Verdict::kCrash, Verdict::kGpuBusy}) {
    result.verdict = cost;
    EXPECT_FALSE(wrong_outputs_under_tool("racecheck", result).has_value()) << verdict_name(cost);
  }
}

// A run under a tool that hung or crashed before a single shape finished checked nothing: a
// kernel that stalls or traps once it runs as slowly as a checked kernel must not pass. After a
// shape or more, a timeout is the tool's budget running out, as before.
TEST(SanitizerRun, ATimeoutOrCrashBeforeAnyShapeFinishedIsAFinding) {
  EvalResult result;
  result.detail = "candidate.cu was still running after its limit of 30.0 s";
  for (Verdict stalled : {Verdict::kTimeout, Verdict::kCrash}) {
    result.verdict = stalled;
    result.shapes_verified = 0;
    auto finding = unchecked_under_tool("memcheck", result);
    ASSERT_TRUE(finding.has_value()) << verdict_name(stalled);
    EXPECT_EQ(finding->tool, "memcheck");
    EXPECT_NE(finding->describe().find("no shape finished under the tool"), std::string::npos)
        << finding->describe();
    EXPECT_NE(finding->describe().find("still running"), std::string::npos);
    result.shapes_verified = 1;
    EXPECT_FALSE(unchecked_under_tool("memcheck", result).has_value()) << verdict_name(stalled);
    // The worker never answered (the tool's wall limit): what it finished is unknown, the tool's
    // cost as before.
    result.shapes_verified = -1;
    EXPECT_FALSE(unchecked_under_tool("memcheck", result).has_value()) << verdict_name(stalled);
  }
  result.shapes_verified = 0;
  for (Verdict other : {Verdict::kOk, Verdict::kIncorrect, Verdict::kGpuBusy}) {
    result.verdict = other;
    EXPECT_FALSE(unchecked_under_tool("memcheck", result).has_value()) << verdict_name(other);
  }
}

}  // namespace
}  // namespace kopt
