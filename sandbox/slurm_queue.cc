#include "sandbox/slurm_queue.h"

#include <chrono>
#include <filesystem>
#include <regex>

#include "common/strings.h"
#include "common/subprocess.h"

namespace kopt {

std::optional<std::string> queued_srun_job(const std::string& srun_stderr) {
  static const std::regex queued(R"(srun: job (\d+) queued)");
  std::smatch match;
  if (!std::regex_search(srun_stderr, match, queued)) return std::nullopt;
  return match[1].str();
}

std::optional<std::string> squeue_for(const std::vector<std::string>& launcher) {
  for (const std::string& arg : launcher) {
    std::filesystem::path path(arg);
    if (path.filename() != "srun") continue;
    return path.has_parent_path() ? (path.parent_path() / "squeue").string()
                                  : std::string("squeue");
  }
  return std::nullopt;
}

std::optional<std::string> slurm_pending_reason(const std::string& squeue, const std::string& job) {
  auto out = run_command({squeue, "--noheader", "--jobs=" + job, "--format=%r"}, "",
                         std::chrono::seconds(5));
  if (!out || out->exit_code != 0) return std::nullopt;
  std::string reason = trim(out->stdout_text);
  if (reason.empty() || reason == "None" || reason.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  return reason;
}

}  // namespace kopt
