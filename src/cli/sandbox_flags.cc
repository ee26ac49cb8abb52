#include "src/cli/sandbox_flags.h"

#include "common/strings.h"

namespace kopt::cli {

std::filesystem::path default_sandbox_worker() {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "kopt-sandbox";  // searched in PATH
  return self.parent_path() / "kopt-sandbox";
}

void add_sandbox_flags(cxxopts::Options& options) {
  options.add_options("GPU worker")("worker",
                                    "the kopt-sandbox worker (default: next to the kopt binary)",
                                    cxxopts::value<std::string>())(
      "worker-prefix",
      "command that runs the worker elsewhere, e.g. \"srun --gres=gpu:1\" or \"ssh gpu7\"",
      cxxopts::value<std::string>()->default_value(""))("device", "GPU index",
                                                        cxxopts::value<int>()->default_value("0"));
}

SandboxOptions sandbox_options_from(const cxxopts::ParseResult& args) {
  SandboxOptions options;
  options.worker =
      args.count("worker") ? args["worker"].as<std::string>() : default_sandbox_worker().string();
  for (const auto& word : split(args["worker-prefix"].as<std::string>(), ' ')) {
    if (!word.empty()) options.command_prefix.push_back(word);
  }
  options.device = args["device"].as<int>();
  return options;
}

}  // namespace kopt::cli
