#include "sandbox/own_gpu_processes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace kopt {

std::vector<unsigned> parse_own_gpu_pids(const std::string& text, unsigned uid,
                                         std::optional<unsigned> (*owner_of)(unsigned pid)) {
  std::vector<unsigned> pids;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty() || item.size() > 9 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    auto pid = static_cast<unsigned>(std::stoul(item));
    if (pid == 0) continue;
    auto owner = owner_of(pid);
    if (owner && *owner == uid) pids.push_back(pid);
  }
  return pids;
}

std::optional<unsigned> proc_owner(unsigned pid) {
  struct stat info {};
  std::string path = "/proc/" + std::to_string(pid);
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return static_cast<unsigned>(info.st_uid);
}

std::vector<unsigned> own_gpu_pids() {
  const char* text = std::getenv(kOwnGpuPidsVariable);
  if (!text) return {};
  return parse_own_gpu_pids(text, static_cast<unsigned>(::getuid()), proc_owner);
}

std::vector<GpuProcess> foreign_processes(const GpuActivity& activity, unsigned self,
                                          const std::vector<unsigned>& own,
                                          std::vector<GpuProcess>* declared) {
  GpuActivity rest = activity;
  rest.processes.clear();
  for (const auto& p : activity.processes) {
    if (p.pid != self && std::find(own.begin(), own.end(), p.pid) != own.end()) {
      if (declared) declared->push_back(p);
    } else {
      rest.processes.push_back(p);
    }
  }
  return other_processes(rest, self);
}

}  // namespace kopt
