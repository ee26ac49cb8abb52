#include "tests/sandbox/adversarial_files.h"

#include <algorithm>
#include <sstream>

#include "common/files.h"
#include "common/strings.h"
#include "sandbox/cuda_driver.h"

namespace kopt::testing {

namespace fs = std::filesystem;

Result<AdversarialKernel> read_adversarial_kernel(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return make_error(text.error());
  AdversarialKernel kernel;
  kernel.name = path.stem().string();
  kernel.path = path;
  kernel.source = *text;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  // The header is the run of // comment lines at the top of the file.
  while (std::getline(lines, line) && starts_with(line, "//")) {
    ++number;
    std::string body = trim(line.substr(2));
    auto colon = body.find(':');
    if (colon == std::string::npos) continue;
    std::string key = body.substr(0, colon);
    std::string value = trim(body.substr(colon + 1));
    std::string where = path.string() + ":" + std::to_string(number) + ": ";
    if (key == "expect") {
      for (const auto& name : split(value, '|')) {
        auto verdict = parse_verdict(trim(name));
        if (!verdict) return make_error(where + "unknown verdict '" + trim(name) + "'");
        kernel.expected.push_back(*verdict);
      }
    } else if (key == "task") {
      kernel.task = value;
    } else if (key == "rounds") {
      kernel.rounds = std::stoi(value);
    } else if (key == "log") {
      kernel.log = value;
    } else if (key == "max-speedup") {
      kernel.max_speedup = std::stod(value);
    } else if (key == "stress") {
      kernel.stress = value;
    } else if (key == "without-stress") {
      for (const auto& name : split(value, '|')) {
        auto verdict = parse_verdict(trim(name));
        if (!verdict) return make_error(where + "unknown verdict '" + trim(name) + "'");
        kernel.without_stress.push_back(*verdict);
      }
    }
  }
  if (kernel.expected.empty()) {
    return make_error(path.string() + ": no '// expect: VERDICT' line in the header");
  }
  return kernel;
}

Result<std::vector<AdversarialKernel>> kernels_in(const fs::path& dir) {
  std::vector<fs::path> paths;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".cu") paths.push_back(entry.path());
  }
  if (error) return make_error(dir.string() + ": " + error.message());
  std::sort(paths.begin(), paths.end());
  std::vector<AdversarialKernel> kernels;
  for (const auto& path : paths) {
    auto kernel = read_adversarial_kernel(path);
    if (!kernel) return make_error(kernel.error());
    kernels.push_back(std::move(*kernel));
  }
  return kernels;
}

std::vector<std::string> kernel_names_in(const fs::path& dir) {
  std::vector<std::string> names;
  auto kernels = kernels_in(dir);
  if (kernels) {
    for (const auto& k : *kernels) names.push_back(k.name);
  }
  return names;
}

Result<std::vector<AdversarialKernel>> adversarial_kernels() {
  return kernels_in(KOPT_ADVERSARIAL_DIR);
}

std::vector<std::string> adversarial_kernel_names() {
  return kernel_names_in(KOPT_ADVERSARIAL_DIR);
}

fs::path adversarial_task_dir(const std::string& task) {
  fs::path suite = fs::path(KOPT_SOURCE_DIR) / "tasks" / task;
  if (fs::exists(suite / "task.json")) return suite;
  return fs::path(KOPT_ADVERSARIAL_DIR).parent_path() / "tasks" / task;
}

std::string describe_verdicts(const std::vector<Verdict>& verdicts) {
  std::vector<std::string> names;
  for (Verdict v : verdicts) names.push_back(verdict_name(v));
  return join(names, "|");
}

KernelSource adversarial_task_file(const std::string& task, const std::string& name) {
  auto path = adversarial_task_dir(task) / name;
  auto text = read_file(path);
  if (!text) throw std::runtime_error(text.error());
  return {*text, path.string(), {}};
}

std::string missing_gpu() {
  auto driver = load_cuda_driver();
  if (!driver) return driver.error();
  int count = 0;
  if ((*driver)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return "no CUDA device";
  return "";
}

}  // namespace kopt::testing
