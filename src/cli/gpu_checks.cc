#include "src/cli/gpu_checks.h"

#include <iostream>

#include "common/files.h"
#include "common/verdict.h"
#include "sandbox/compiler.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/task_spec.h"

namespace kopt::cli {

std::optional<std::string> detect_gpu_arch() {
  auto driver = load_cuda_driver();
  if (!driver) return std::nullopt;
  const CudaDriver& d = **driver;
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return std::nullopt;
  CUdevice dev;
  if (d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return std::nullopt;
  int major = 0, minor = 0;
  d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  return arch_of_compute_capability(major, minor);
}

int run_gpu_task_checks(const std::vector<std::filesystem::path>& task_dirs,
                        const SandboxOptions& worker, nlohmann::json* json_out) {
  // Text for people, or (json_out) one entry per task under "gpu_checks".
  nlohmann::json entries = nlohmann::json::array();
  auto stop = [&](const std::string& message) {
    std::cerr << "kopt tasks check: " << message << "\n";
    if (json_out) (*json_out)["gpu_error"] = message;
    return 3;
  };
  auto driver = load_cuda_driver();
  if (!driver) return stop(driver.error() + "\n  (use --compile-only on machines without a GPU)");
  SandboxEvaluator evaluator(worker);
  if (auto started = evaluator.start(); !started) return stop(started.error());
  int unsound = 0;
  auto report = [&](const std::filesystem::path& dir, const std::vector<std::string>& problems) {
    unsound += problems.empty() ? 0 : 1;
    if (json_out) {
      entries.push_back(
          {{"task", dir.filename().string()}, {"ok", problems.empty()}, {"problems", problems}});
      return;
    }
    std::printf("%-4s %s (GPU hygiene)\n", problems.empty() ? "ok" : "FAIL",
                dir.filename().c_str());
    for (const auto& p : problems) std::printf("     %s\n", p.c_str());
  };
  for (const auto& dir : task_dirs) {
    auto task = load_task(dir);
    auto reference = read_file(dir / "reference.cu");
    auto baseline = read_file(dir / "baseline.cu");
    if (!task || !reference || !baseline) {
      report(dir, {!task ? task.error() : (!reference ? reference.error() : baseline.error())});
      continue;
    }
    nlohmann::json body = {{"task_json", task->raw_json},
                           {"reference", {{"source", *reference}, {"origin", "reference.cu"}}},
                           {"baseline", {{"source", *baseline}, {"origin", "baseline.cu"}}}};
    auto answer = evaluator.call("check_task", std::move(body), 600);
    if (!answer) {
      report(dir, {answer.error()});
      continue;
    }
    const nlohmann::json& result = (*answer)["result"];
    std::vector<std::string> problems;
    for (const auto& f : result["findings"])
      problems.push_back(f.value("problem", "") + " (" + f.value("shape", "") + ")");
    // Parsed once here; a name this kopt does not know is a disagreement too.
    std::string baseline_verdict = result.value("baseline_verdict", "ok");
    if (parse_verdict(baseline_verdict) != Verdict::kOk)
      problems.push_back("the baseline disagrees with the reference: " + baseline_verdict + ": " +
                         result.value("baseline_detail", ""));
    report(dir, problems);
  }
  if (json_out) {
    (*json_out)["gpu_checks"] = entries;
    (*json_out)["failed_gpu_checks"] = unsound;
  } else {
    std::printf("%zu tasks, %d refused by the GPU hygiene checks\n", task_dirs.size(), unsound);
  }
  return unsound ? 1 : 0;
}

}  // namespace kopt::cli
