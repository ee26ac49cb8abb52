#include "src/cli/task_import.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <iostream>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/name_rules.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/gpu_checks.h"

extern char** environ;

namespace kopt::cli {
namespace {

// The helper script: $KOPT_SCRIPTS_DIR, else ./scripts (a checkout), else the source tree's.
std::filesystem::path helper_script() {
  std::filesystem::path name = "task_import.py";
  if (const char* v = std::getenv("KOPT_SCRIPTS_DIR"); v && *v) return std::filesystem::path(v) / name;
  if (std::filesystem::exists(std::filesystem::path("scripts") / name))
    return std::filesystem::path("scripts") / name;
  return std::filesystem::path(KOPT_SOURCE_DIR) / "scripts" / name;
}

// Runs the helper with this process's stdout and stderr (its progress is the user's to read).
int run_helper(const std::vector<std::string>& args) {
  const char* python = std::getenv("KOPT_PYTHON");
  std::vector<std::string> argv = {python && *python ? python : "python3",
                                   helper_script().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, raw[0], nullptr, nullptr, raw.data(), environ) != 0) {
    std::cerr << "kopt tasks import: cannot start " << argv[0]
              << " (import needs Python 3 with PyTorch; set KOPT_PYTHON to choose one)\n";
    return 3;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 3;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// kopt's own checks on the staged folder: task.json parsed and validated, both kernels planned
// and compiled. Every problem printed; false when any.
bool staged_task_sound(const std::filesystem::path& dir, const std::string& arch_option) {
  auto task = load_task(dir);
  if (!task) {
    std::cerr << "kopt tasks import: the derived task.json fails kopt's validation:\n"
              << task.error() << "\n";
    return false;
  }
  std::string arch = arch_option;
  if (arch.empty()) arch = detect_gpu_arch().value_or("sm_90a");
  CompileCache cache(cache_directory() / "compile");
  bool ok = true;
  for (const auto& item : compile_check_task(dir, arch, &cache)) {
    if (item.ok) continue;
    std::cerr << "kopt tasks import: " << item.subject << ": " << item.message << "\n";
    ok = false;
  }
  return ok;
}

int import_one(const ImportRequest& r) {
  std::filesystem::path file = r.files[0];
  std::string name = r.name.empty() ? file.stem().string() : r.name;
  if (!is_task_name(name)) {
    std::cerr << "kopt tasks import: task name '" << name << "': " << kTaskNameRule
              << " (give --name)\n";
    return 2;
  }
  if (r.reference.empty()) {
    std::cerr << "kopt tasks import: give --reference FILE, a kernel file with its kopt:plan that "
                 "computes the module's outputs (it is validated against the module at every "
                 "shape); drafting one with the coder model is not available yet\n";
    return 2;
  }
  std::filesystem::path target = r.tasks_root / name;
  if (std::filesystem::exists(target)) {
    std::cerr << "kopt tasks import: " << target.string() << " exists; choose another --name\n";
    return 2;
  }
  // Staged beside the suite under a dot name (never listed as a task), moved in when sound.
  std::filesystem::path staging = r.tasks_root / (".import-" + name);
  std::error_code ec;
  std::filesystem::remove_all(staging, ec);
  std::filesystem::create_directories(r.tasks_root, ec);
  std::vector<std::string> args = {file.string(), "--out", staging.string(), "--name", name,
                                   "--reference", r.reference};
  if (!r.function.empty()) args.insert(args.end(), {"--function", r.function});
  int code = run_helper(args);
  if (code != 0) {
    std::filesystem::remove_all(staging, ec);
    return code;
  }
  if (!staged_task_sound(staging, r.arch)) {
    std::filesystem::remove_all(staging, ec);
    return 1;
  }
  std::filesystem::rename(staging, target, ec);
  if (ec) {
    std::cerr << "kopt tasks import: moving " << staging.string() << " to " << target.string()
              << ": " << ec.message() << "\n";
    return 1;
  }
  std::printf("wrote %s (task.json, reference.cu, baseline.cu = the reference, torch_op.py, "
              "module.py)\nnext: kopt tasks check %s   (on a GPU)\n",
              target.c_str(), name.c_str());
  return 0;
}

}  // namespace

int import_tasks(const ImportRequest& r) {
  if (r.files.empty()) {
    std::cerr << "kopt tasks import: give a problem file (kopt tasks import FILE.py --reference "
                 "reference.cu [--name N] | --kernelbench FILE...)\n";
    return 2;
  }
  if (!r.kernelbench) {
    if (r.files.size() != 1) {
      std::cerr << "kopt tasks import: one file at a time (--kernelbench takes many)\n";
      return 2;
    }
    return import_one(r);
  }
  std::vector<std::string> args = r.files;
  args.insert(args.end(), {"--kernelbench", "--out-root", r.tasks_root.string()});
  if (!r.references.empty()) args.insert(args.end(), {"--references", r.references});
  int code = run_helper(args);
  if (code > 1) return code;
  // The helper staged each validated problem as .import-NAME: kopt's checks, then moved in.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(r.tasks_root, ec)) {
    std::string staged = entry.path().filename().string();
    if (staged.rfind(".import-", 0) != 0 || !entry.is_directory()) continue;
    std::filesystem::path target = r.tasks_root / staged.substr(8);
    if (std::filesystem::exists(target) || !staged_task_sound(entry.path(), r.arch)) {
      std::cerr << "kopt tasks import: " << staged.substr(8) << " not added"
                << (std::filesystem::exists(target) ? " (the folder exists)" : "") << "\n";
      std::filesystem::remove_all(entry.path(), ec);
      code = 1;
      continue;
    }
    std::filesystem::rename(entry.path(), target, ec);
    std::printf("wrote %s\n", target.c_str());
  }
  return code;
}

}  // namespace kopt::cli
