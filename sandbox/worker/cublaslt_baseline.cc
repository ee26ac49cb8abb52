#include "sandbox/worker/cublaslt_baseline.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "sandbox/task_baselines.h"
#include "sandbox/timing_stats.h"
#include "sandbox/worker/cold_l2.h"
#include "sandbox/worker/cublaslt_library.h"
#include "sandbox/worker/cupti_timer.h"
#include "sandbox/worker/gpu_quiet_check.h"
#include "sandbox/worker/hygiene.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/verifier.h"

namespace kopt::worker {
namespace {

using nlohmann::json;

// As PyTorch gives cuBLASLt on Hopper; larger workspaces change which algorithms are offered.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
constexpr int kBatch = 10;            // samples between CUPTI flushes and stopping decisions
constexpr int kQuickSamples = 10;     // per algorithm in the autotuned search
constexpr unsigned char kNaN = 0xFF;  // poison before each checked run: NaN in every float type

Result<cudaDataType_t> cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return make_error("cuBLASLt baselines take f32, f16 or bf16 tensors, not " +
                        dtype_name(dtype));
  }
}

Status cublas_check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return ok_status();
  return make_error(std::string(call) + " failed: " + describe_cublas_status(status));
}

// The handle, descriptors and layouts of one matmul, destroyed in reverse.
class Matmul {
 public:
  Matmul(const CublasLt& lib) : lib_(lib) {}
  ~Matmul() {
    for (auto layout : {a_, b_, d_})
      if (layout) lib_.cublasLtMatrixLayoutDestroy(layout);
    if (preference_) lib_.cublasLtMatmulPreferenceDestroy(preference_);
    if (desc_) lib_.cublasLtMatmulDescDestroy(desc_);
    if (handle_) lib_.cublasLtDestroy(handle_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  Status set_up(const CublasLtCall& call, CUdeviceptr bias) {
    auto a_type = cuda_type(call.a_dtype), b_type = cuda_type(call.b_dtype),
         d_type = cuda_type(call.d_dtype);
    if (!a_type || !b_type || !d_type)
      return make_error(!a_type ? a_type.error() : (!b_type ? b_type.error() : d_type.error()));
    if (auto s = cublas_check(lib_.cublasLtCreate(&handle_), "cublasLtCreate"); !s) return s;
    // fp32 accumulation for every type, and no TF32 for f32 (the tasks' f32 is IEEE f32).
    if (auto s = cublas_check(lib_.cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                              "cublasLtMatmulDescCreate");
        !s)
      return s;
    cublasOperation_t transa = call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t transb = CUBLAS_OP_N;
    if (auto s = set(CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa); !s) return s;
    if (auto s = set(CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb); !s) return s;
    if (bias) {
      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
      void* pointer = reinterpret_cast<void*>(bias);
      if (auto s = set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue); !s) return s;
      if (auto s = set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer, sizeof pointer); !s) return s;
    }
    if (auto s = layout(&a_, *a_type, call.a_rows, call.a_cols); !s) return s;
    if (auto s = layout(&b_, *b_type, call.b_rows, call.b_cols); !s) return s;
    if (auto s = layout(&d_, *d_type, call.d_rows, call.d_cols); !s) return s;
    if (auto s = cublas_check(lib_.cublasLtMatmulPreferenceCreate(&preference_),
                              "cublasLtMatmulPreferenceCreate");
        !s)
      return s;
    uint64_t workspace = kWorkspaceBytes;
    return cublas_check(
        lib_.cublasLtMatmulPreferenceSetAttribute(
            preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
        "cublasLtMatmulPreferenceSetAttribute");
  }

  // The heuristic's algorithms, best first, that it says can run.
  Result<std::vector<cublasLtMatmulHeuristicResult_t>> algorithms(int count) {
    std::vector<cublasLtMatmulHeuristicResult_t> results(size_t(std::max(1, count)));
    int returned = 0;
    if (auto s = cublas_check(
            lib_.cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, d_, d_, preference_,
                                                int(results.size()), results.data(), &returned),
            "cublasLtMatmulAlgoGetHeuristic");
        !s)
      return make_error(s.error());
    results.resize(size_t(std::max(0, returned)));
    std::erase_if(results, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
    if (results.empty())
      return make_error("cuBLASLt's heuristic offers no algorithm for this call");
    return results;
  }

  // D = A op B (C = D, beta 0), queued on `stream`.
  Status run(const cublasLtMatmulHeuristicResult_t& algo, CUdeviceptr a, CUdeviceptr b,
             CUdeviceptr d, CUdeviceptr workspace, CUstream stream) {
    const float alpha = 1.0f, beta = 0.0f;
    void* out = reinterpret_cast<void*>(d);
    return cublas_check(
        lib_.cublasLtMatmul(handle_, desc_, &alpha, reinterpret_cast<const void*>(a), a_,
                            reinterpret_cast<const void*>(b), b_, &beta, out, d_, out, d_,
                            &algo.algo, reinterpret_cast<void*>(workspace), kWorkspaceBytes,
                            reinterpret_cast<cudaStream_t>(stream)),
        "cublasLtMatmul");
  }

 private:
  Status set(cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
    return cublas_check(lib_.cublasLtMatmulDescSetAttribute(desc_, attribute, value, bytes),
                        "cublasLtMatmulDescSetAttribute");
  }
  Status layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, int64_t rows, int64_t cols) {
    return cublas_check(
        lib_.cublasLtMatrixLayoutCreate(out, type, uint64_t(rows), uint64_t(cols), rows),
        "cublasLtMatrixLayoutCreate");
  }

  const CublasLt& lib_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
};

// One measurement's state: the task's inputs and reference outputs at the timed shape, the
// output and workspace buffers, the cold-L2 flush and a stream CUPTI knows.
class CublasLtRun {
 public:
  CublasLtRun(Device& device, SupportKernels& support, const TaskSpec& task,
              const CublasLtMapping& mapping, const CublasLt& lib)
      : device_(device), support_(support), task_(task), mapping_(mapping), matmul_(lib) {}

  Status prepare(const LoadedKernel& reference, uint64_t seed) {
    sizes_ = task_.bind({});
    auto call = cublaslt_call(task_, mapping_, sizes_);
    if (!call) return make_error(call.error());
    call_ = *call;
    InputSetMaker maker(device_, support_, task_, reference, sizes_);
    auto set = maker.allocate();
    if (!set) return make_error(set.error());
    if (auto s = maker.fill(**set, seed); !s) return s;
    // cuBLASLt reads the set itself (a trusted library, no copies): its inputs plain again.
    for (const auto& t : task_.inputs) {
      const BufferRef& b = (*set)->inputs.at(t.name);
      if (auto s = support_.mask(b.ptr, b.dtype, b.elements); !s) return s;
    }
    (*set)->inputs_masked = false;
    (*set)->master_checksums = (*set)->input_checksums;
    set_ = std::move(*set);
    out_spec_ = task_.find_tensor(mapping_.out);
    auto out = GuardedBuffer::create(device_, out_spec_->dtype, call_.m * call_.n);
    if (!out) return make_error(out.error());
    out_.emplace(std::move(*out));
    auto workspace = allocate(device_, kWorkspaceBytes);
    if (!workspace) return make_error(workspace.error());
    workspace_ = std::move(*workspace);
    auto flush = ColdL2::create(device_);
    if (!flush) return make_error(flush.error());
    cold_l2_.emplace(std::move(*flush));
    auto stream = Stream::create(device_);
    if (!stream) return make_error(stream.error());
    stream_.emplace(std::move(*stream));
    auto id = CuptiKernelTimer::stream_id(device_.context(), stream_->get());
    if (!id) return make_error(id.error());
    stream_id_ = *id;
    CUdeviceptr bias = mapping_.bias.empty() ? 0 : set_->inputs.at(mapping_.bias).ptr;
    return matmul_.set_up(call_, bias);
  }

  Result<std::vector<cublasLtMatmulHeuristicResult_t>> algorithms(int count) {
    return matmul_.algorithms(count);
  }

  // The algorithm's output against the reference's, under the task's tolerance ("" when right).
  Result<std::string> check(const cublasLtMatmulHeuristicResult_t& algo) {
    if (auto s = fill_bytes(device_, out_->ref(), kNaN); !s) return make_error(s.error());
    if (auto s = launch(algo); !s) return make_error(s.error());
    if (auto s = synchronize(); !s) return make_error(s.error());
    auto outcome = check_output(support_, task_, *out_spec_, out_->ref(),
                                set_->expected.at(mapping_.out), Verdict::kIncorrect, true);
    if (!outcome) return make_error(outcome.error());
    return outcome->verdict == Verdict::kOk ? std::string() : outcome->detail;
  }

  // Samples of one algorithm until the stopping rule is met (or `fixed` samples when given).
  Result<TimingSummary> time(const cublasLtMatmulHeuristicResult_t& algo,
                             const EvalOptions& options, int fixed, size_t* kernels) {
    // A warm-up call, which also says how many kernels one call launches (split-K adds one):
    // the records of earlier calls (the output check) are drained first.
    if (auto s = records(); !s) return make_error(s.error());
    if (auto s = sample(algo, 0); !s) return make_error(s.error());
    if (auto s = synchronize(); !s) return make_error(s.error());
    auto warm = records();
    if (!warm) return make_error(warm.error());
    if (warm->empty()) return make_error("cuBLASLt launched no kernel CUPTI could see");
    *kernels = warm->size();
    StoppingParams params = stopping_params(options);
    if (fixed > 0) params.max_noise = 0, params.min_samples = fixed, params.max_samples = fixed;
    StoppingCriterion stop(params);
    for (int taken = 0; !stop.finished();) {
      std::vector<double> mhz;
      for (int b = 0; b < kBatch && !(fixed > 0 && taken >= fixed); ++b, ++taken) {
        if (auto s = sample(algo, unsigned(taken + 1)); !s) return make_error(s.error());
        if (auto s = synchronize(); !s) return make_error(s.error());
        auto clock = support_.probe_clock_mhz();
        mhz.push_back(clock ? *clock : 0.0);
      }
      if (mhz.empty()) break;
      auto batch = records();
      if (!batch) return make_error(batch.error());
      auto spans = split_into_samples(std::move(*batch), *kernels, "cuBLASLt");
      if (!spans) return make_error(spans.error());
      if (spans->size() != mhz.size())
        return make_error("cuBLASLt: " + std::to_string(spans->size()) + " samples recorded for " +
                          std::to_string(mhz.size()) + " taken");
      for (size_t i = 0; i < spans->size(); ++i) stop.add({(*spans)[i], mhz[i]});
    }
    if (CuptiKernelTimer::dropped() > 0)
      return make_error("CUPTI dropped kernel records; the measurement is incomplete");
    return stop.summary();
  }

  std::string shape() const { return describe_shape(sizes_); }

 private:
  Status launch(const cublasLtMatmulHeuristicResult_t& algo) {
    const BufferMap& in = set_->inputs;
    // cuBLAS's A is the task's b, its B the task's a (sandbox/task_baselines.h).
    return matmul_.run(algo, in.at(mapping_.b).ptr, in.at(mapping_.a).ptr, out_->ref().ptr,
                       workspace_.ptr(), stream_->get());
  }
  // A cold L2 as candidates get it (cold_l2.h), then the call.
  Status sample(const cublasLtMatmulHeuristicResult_t& algo, unsigned flush_value) {
    CudaFailure failure;
    if (!cold_l2_->queue(stream_->get(), flush_value, &failure)) return make_error(failure.message);
    return launch(algo);
  }
  Status synchronize() {
    CudaFailure failure;
    if (!device_.check(device_.driver().cuStreamSynchronize(stream_->get()), "cuStreamSynchronize",
                       &failure))
      return make_error(failure.message);
    return ok_status();
  }
  // This stream's kernel records since the last call (the clock probes run on another).
  Result<std::vector<KernelRecord>> records() {
    auto all = CuptiKernelTimer::collect();
    if (!all) return make_error(all.error());
    std::erase_if(*all, [&](const KernelRecord& r) { return r.stream_id != stream_id_; });
    return std::move(*all);
  }

  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const CublasLtMapping& mapping_;
  Matmul matmul_;
  ShapeBinding sizes_;
  CublasLtCall call_;
  std::unique_ptr<InputSet> set_;
  const TensorSpec* out_spec_ = nullptr;
  std::optional<GuardedBuffer> out_;
  DeviceMemory workspace_;
  std::optional<ColdL2> cold_l2_;
  std::optional<Stream> stream_;
  uint32_t stream_id_ = 0;
};

json row(const std::string& name, const TimingSummary& t, size_t kernels, std::string detail,
         const std::string& shape, const CublasLt& lib) {
  return {
      {"name", name},
      {"median_us", t.median_us},
      {"noise", t.noise},
      {"min_us", t.min_us},
      {"samples", t.samples},
      {"kernels", kernels},
      {"detail", std::move(detail)},
      {"shape", shape},
      {"library_versions",
       {{"cublasLt", lib.version_text()}, {"path", lib.path}, {"timer", "kopt-sandbox CUPTI"}}}};
}

// A number taken on a shared GPU is never reported: checked before and after, facts in `answer`.
Status gpu_is_quiet(GpuQuietCheck& quiet, const EvalOptions& options, const char* when,
                    json& answer) {
  if (!options.check_gpu_quiet) return ok_status();
  auto check = quiet.check(options.probe_tolerance);
  if (!check) return make_error(check.error());
  answer["gpu_check"][when] = check->facts;
  if (check->quiet) return ok_status();
  return make_error(std::string("gpu_busy: the GPU is not ours alone ") + when +
                    " timing: " + check->reason);
}

Result<EvalOptions> request_options(const json& request) {
  if (!request.contains("options")) return EvalOptions{};
  auto parsed = eval_options_from_json(request["options"]);
  if (!parsed) return make_error(parsed.error());
  return *parsed;
}

// The fastest right algorithm by a quick timing (median, index), and how many were timed.
struct AlgorithmSearch {
  std::optional<std::pair<double, size_t>> best;
  int tried = 0;
};

// The search: every algorithm that is right, a few samples each; those left out go to `rejected`.
Result<AlgorithmSearch> search_algorithms(
    Device& device, CublasLtRun& run,
    const std::vector<cublasLtMatmulHeuristicResult_t>& algorithms, const EvalOptions& options,
    json& rejected) {
  AlgorithmSearch search;
  for (size_t i = 0; i < algorithms.size(); ++i) {
    // An algorithm the heuristic offered may still fail to launch here: it is left out, unless
    // the context is gone with it.
    auto wrong = i == 0 ? Result<std::string>(std::string()) : run.check(algorithms[i]);
    if (!wrong && device.context_lost()) return make_error(wrong.error());
    if (!wrong || !wrong->empty()) {
      rejected.push_back({{"index", i}, {"detail", wrong ? *wrong : wrong.error()}});
      continue;
    }
    size_t n = 0;
    auto quick = run.time(algorithms[i], options, kQuickSamples, &n);
    if (!quick) {
      if (device.context_lost()) return make_error(quick.error());
      rejected.push_back({{"index", i}, {"detail", quick.error()}});
      continue;
    }
    ++search.tried;
    if (!search.best || quick->median_us < search.best->first) search.best = {quick->median_us, i};
  }
  return search;
}

}  // namespace

Result<json> measure_cublaslt(Device& device, SupportKernels& support, const json& request) {
  auto task = parse_task(request.at("task_json").get<std::string>(), "task.json");
  if (!task) return make_error(task.error());
  TaskBaselines declared = task_baselines(task->raw_json);
  if (!declared.cublaslt) return make_error("task.json has no \"cublaslt\" mapping");
  auto lib = load_cublaslt();
  if (!lib) return make_error(lib.error());
  auto reference = build_trusted_kernel(device, request.at("reference"), *task);
  if (!reference) return make_error("reference: " + reference.error());
  auto options = request_options(request);
  if (!options) return make_error(options.error());

  CublasLtRun run(device, support, *task, *declared.cublaslt, **lib);
  if (auto s = run.prepare(*reference, request.value("seed", uint64_t(12345))); !s)
    return make_error(s.error());
  auto algorithms = run.algorithms(request.value("autotune", 16));
  if (!algorithms) return make_error(algorithms.error());

  json answer = {{"device", device.info().to_json()}, {"rejected", json::array()}};
  GpuQuietCheck quiet(device, support);
  if (auto s = gpu_is_quiet(quiet, *options, "before", answer); !s) return make_error(s.error());

  // The heuristic's first must be right: if it is not, the mapping is wrong.
  auto first_wrong = run.check((*algorithms)[0]);
  if (!first_wrong) return make_error(first_wrong.error());
  if (!first_wrong->empty())
    return make_error(
        "cuBLASLt disagrees with the task's reference (is the \"cublaslt\" mapping "
        "right?): " +
        *first_wrong);
  size_t kernels = 0;
  auto heuristic = run.time((*algorithms)[0], *options, 0, &kernels);
  if (!heuristic) return make_error(heuristic.error());
  json rows = json::array();
  rows.push_back(row("cublaslt_heuristic", *heuristic, kernels,
                     "heuristic's first of " + std::to_string(algorithms->size()) + " algorithms",
                     run.shape(), **lib));

  auto search = search_algorithms(device, run, *algorithms, *options, answer["rejected"]);
  if (!search) return make_error(search.error());
  const auto& best = search->best;
  // The heuristic's first winning its own search is the same call: its measurement stands
  // (timed again it would differ by the run-to-run noise alone, and read as a worse "best").
  auto tuned =
      best->second == 0 ? heuristic : run.time((*algorithms)[best->second], *options, 0, &kernels);
  if (!tuned) return make_error(tuned.error());
  rows.push_back(row("cublaslt_autotuned", *tuned, kernels,
                     "best of " + std::to_string(search->tried) + " heuristic algorithms (index " +
                         std::to_string(best->second) + ")",
                     run.shape(), **lib));
  if (auto s = gpu_is_quiet(quiet, *options, "after", answer); !s) return make_error(s.error());
  answer["rows"] = std::move(rows);
  return answer;
}

}  // namespace kopt::worker
