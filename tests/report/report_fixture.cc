#include "tests/report/report_fixture.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kopt::report::testing {

namespace {

using namespace kopt::memory;

template <typename T>
T unwrap(Result<T> result, const char* what) {
  if (!result) throw std::runtime_error(std::string(what) + ": " + result.error());
  return std::move(*result);
}

// "HH:MM" on the night of run 2, or a whole ISO time.
std::string at(const std::string& when) {
  return when.size() > 5 ? when : "2026-11-22T" + when + ":00Z";
}

// A kernel file whose body differs by `body` lines, so diffs between kernels are real.
std::string source(const std::string& name, const std::string& body) {
  return "/* kopt:plan\n{\"launches\": [{\"kernel\": \"" + name +
         "\", \"grid\": [\"rows\"], \"block\": [256], \"args\": [\"x\", \"out\", \"rows\", "
         "\"cols\"]}]}\n*/\nextern \"C\" __global__ void " +
         name +
         "(const float* x, float* out, int rows, int cols) {\n  const float* row = x + "
         "(long long)blockIdx.x * cols;\n" +
         body + "}\n";
}

struct Night {
  MemoryStore& store;
  int64_t run;

  int64_t kernel(const std::string& task, const std::string& src, std::optional<int64_t> parent,
                 const std::string& agent, const std::string& model, bool tuner,
                 const std::string& created) {
    KernelRecord k;
    k.task = task;
    k.source = src;
    k.parent_id = parent;
    k.run_id = run;
    k.origin.agent = parse_origin(agent).value();
    k.origin.model = model;
    k.origin.tuner = tuner;
    k.created_at = created;
    return unwrap(store.add_kernel(k), "add_kernel");
  }

  void eval(int64_t kernel_id, const std::string& task, const std::string& when,
            const std::string& verdict, double median, double baseline, double sol_us,
            const std::string& detail = "") {
    EvaluationRecord e;
    e.kernel_id = kernel_id;
    e.task = task;
    e.run_id = run;
    e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
    e.verdict = parse_verdict(verdict).value();  // a misspelt name throws
    e.detail = detail;
    if (verdict == "ok") {
      e.median_us = median;
      e.baseline_us = baseline;
      e.speedup = baseline / median;
      e.sol_percent = 100 * sol_us / median;
    }
    e.created_at = at(when);
    unwrap(store.add_evaluation(e), "add_evaluation");
  }

  int64_t pair(const std::string& task, int64_t slow, int64_t fast, double speedup,
               const std::string& summary, const std::string& when) {
    PairRecord p;
    p.task = task;
    p.slow_kernel_id = slow;
    p.fast_kernel_id = fast;
    p.speedup = speedup;
    p.gpu_model = "NVIDIA H100 80GB HBM3";
    p.gpu_arch = "sm_90";
    p.summary = summary;
    p.tags = {task};
    p.created_at = at(when);
    return unwrap(store.add_pair(p), "add_pair");
  }

  void llm(const std::string& model, int64_t prompt, int64_t completion, double cost,
           const std::string& status, const std::string& when) {
    LlmCallRecord c;
    c.run_id = run;
    c.agent = "coder";
    c.provider = "openai";
    c.model = model;
    c.prompt_tokens = prompt;
    c.completion_tokens = completion;
    c.cost_usd = cost;
    c.latency_ms = 2000;
    c.status = status;
    c.created_at = at(when);
    unwrap(store.record_llm_call(c), "record_llm_call");
  }
};

// start_run stamps "now"; the night needs fixed times so the time axes are predictable.
void set_run_times(MemoryStore& store, int64_t run, const std::string& started,
                   const std::string& finished) {
  auto s =
      store.database().prepare("UPDATE runs SET started_at = ?1, finished_at = ?2 WHERE id = ?3");
  if (!s) throw std::runtime_error(s.error());
  s->bind(1, started).bind(2, finished).bind(3, run);
  if (auto done = s->run(); !done) throw std::runtime_error(done.error());
}

}  // namespace

NightMemory build_night_memory(MemoryStore& store) {
  NightMemory m;
  for (auto [name, family] : {std::pair{"axpy", "elementwise"},
                              {"softmax", "row-reduction"},
                              {"rmsnorm", "normalization"},
                              {"bf16_gemm", "gemm"}}) {
    memory::testing::add_task(store, name, {family, "memory-bound"});
  }

  // Run 1, the night before: one axpy win that run 2's report must not show.
  m.old_run = unwrap(store.start_run("{\"night\": 1}"), "start_run");
  unwrap(store.finish_run(m.old_run, RunStatus::kFinished), "finish_run");
  set_run_times(store, m.old_run, "2026-11-21T00:00:00Z", "2026-11-21T06:00:00Z");
  Night old{store, m.old_run};
  int64_t axpy_base = old.kernel("axpy", source("axpy", "  // baseline\n"), std::nullopt,
                                 "baseline", "", false, "2026-11-21T00:01:00Z");
  int64_t axpy_fast = old.kernel("axpy", source("axpy", "  // float4 loads\n"), axpy_base, "coder",
                                 "gpt-test", false, "2026-11-21T01:00:00Z");
  old.eval(axpy_fast, "axpy", "2026-11-21T01:05:00Z", "ok", 300, 330, 250);
  m.axpy_pair = old.pair("axpy", axpy_base, axpy_fast, 1.1, "float4 loads", "2026-11-21T01:06:00Z");
  old.llm("gpt-test", 5000, 800, 0.5, "ok", "2026-11-21T00:30:00Z");

  // Run 2, the night the report is about.
  m.night_run = unwrap(store.start_run("{\"night\": 2}"), "start_run");
  unwrap(store.finish_run(m.night_run, RunStatus::kFinished), "finish_run");
  set_run_times(store, m.night_run, at("00:00"), at("08:00"));
  Night n{store, m.night_run};

  int64_t sm_base = n.kernel("softmax", source("softmax_rows", "  // two passes, shared tree\n"),
                             std::nullopt, "baseline", "", false, at("00:01"));
  int64_t sm_tuned = n.kernel("softmax", source("softmax_rows", "  // two passes, BLOCK 512\n"),
                              sm_base, "tuner", "", true, at("00:20"));
  int64_t sm_llm =
      n.kernel("softmax", source("softmax_rows", "  // online max and sum\n  // warp shuffles\n"),
               sm_tuned, "coder", "gpt-test", false, at("01:55"));
  int64_t sm_slow = n.kernel("softmax", source("softmax_rows", "  // atomics everywhere\n"),
                             sm_tuned, "coder", "gpt-test", false, at("02:30"));
  int64_t sm_bad = n.kernel("softmax", source("softmax_rows", "  // broken\n"), sm_tuned, "coder",
                            "gpt-test", false, at("01:00"));
  n.eval(sm_base, "softmax", "00:05", "ok", 1000, 1000, 300);
  n.eval(sm_tuned, "softmax", "00:30", "ok", 714, 1000, 300);
  n.eval(sm_bad, "softmax", "01:00", "compile_error", 0, 0, 0,
         "softmax.cu(12): error: identifier \"INFINITY\" is undefined");
  n.eval(sm_bad, "softmax", "01:30", "incorrect", 0, 0, 0, "out[3] = 0.5, expected 0.25");
  n.eval(sm_bad, "softmax", "01:40", "incorrect", 0, 0, 0, "out[3] = 0.5, expected 0.25");
  n.eval(sm_llm, "softmax", "02:00", "ok", 400, 1000, 300);
  n.eval(sm_slow, "softmax", "02:40", "ok", 1100, 1000, 300);
  n.eval(sm_bad, "softmax", "03:00", "timeout", 0, 0, 0, "killed after 80 s");

  int64_t rms_base = n.kernel("rmsnorm", source("rmsnorm_rows", "  // scalar bf16 loads\n"),
                              std::nullopt, "baseline", "", false, at("00:02"));
  int64_t rms_llm = n.kernel("rmsnorm", source("rmsnorm_rows", "  // bf16x2 vector loads\n"),
                             rms_base, "coder", "claude-test", false, at("03:50"));
  int64_t rms_oob = n.kernel("rmsnorm", source("rmsnorm_rows", "  // unguarded tail\n"), rms_base,
                             "coder", "claude-test", false, at("04:50"));
  n.eval(rms_base, "rmsnorm", "00:10", "ok", 180, 180, 80);
  n.eval(rms_llm, "rmsnorm", "04:00", "ok", 100, 180, 80);
  n.eval(rms_oob, "rmsnorm", "05:00", "out_of_bounds", 0, 0, 0,
         "a write landed in the guard zone after out");

  int64_t gemm_base = n.kernel("bf16_gemm", source("gemm_naive", "  // naive\n"), std::nullopt,
                               "baseline", "", false, at("00:03"));
  int64_t gemm_crash = n.kernel("bf16_gemm", source("gemm_naive", "  // wgmma attempt\n"),
                                gemm_base, "coder", "gpt-test", false, at("05:55"));
  n.eval(gemm_base, "bf16_gemm", "00:15", "ok", 40000, 40000, 300);
  n.eval(gemm_crash, "bf16_gemm", "06:00", "crash", 0, 0, 0, "illegal memory access");
  n.eval(gemm_crash, "bf16_gemm", "06:30", "suspicious", 0, 0, 0,
         "median below the speed-of-light bound");

  m.softmax_tuner_pair =
      n.pair("softmax", sm_base, sm_tuned, 1.4, "BLOCK 512 keeps more rows in flight", "00:31");
  m.softmax_llm_pair = n.pair("softmax", sm_tuned, sm_llm, 1.75,
                              "one pass: online max and sum <fused> with warp shuffles", "02:01");
  m.negative_pair = n.pair("softmax", sm_tuned, sm_slow, 0.65, "atomics serialize", "02:41");
  m.rmsnorm_pair = n.pair("rmsnorm", rms_base, rms_llm, 1.8, "bf16x2 vector loads", "04:01");

  n.llm("gpt-test", 12000, 1500, 0.12, "ok", "00:20");
  n.llm("gpt-test", 14000, 1800, 0.15, "ok", "01:50");
  n.llm("gpt-test", 9000, 0, 0.0, "http_429", "03:00");
  n.llm("claude-test", 16000, 2200, 0.30, "ok", "03:40");
  n.llm("claude-test", 15000, 2000, 0.28, "ok", "05:10");
  return m;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

}  // namespace kopt::report::testing
