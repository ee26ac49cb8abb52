#include "src/cli/task_import.h"

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "common/files.h"
#include "common/subprocess.h"
#include "config/config.h"
#include "sandbox/compiler.h"
#include "sandbox/name_rules.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/gpu_checks.h"
#include "src/cli/reference_draft.h"

extern char** environ;

namespace kopt::cli {
namespace {

// The helper script: $KOPT_SCRIPTS_DIR, else ./scripts (a checkout), else the source tree's.
std::filesystem::path helper_script() {
  std::filesystem::path name = "task_import.py";
  if (const char* v = std::getenv("KOPT_SCRIPTS_DIR"); v && *v)
    return std::filesystem::path(v) / name;
  if (std::filesystem::exists(std::filesystem::path("scripts") / name))
    return std::filesystem::path("scripts") / name;
  return std::filesystem::path(KOPT_SOURCE_DIR) / "scripts" / name;
}

std::vector<std::string> helper_argv(const std::vector<std::string>& args) {
  const char* python = std::getenv("KOPT_PYTHON");
  std::vector<std::string> argv = {python && *python ? python : "python3",
                                   helper_script().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Runs the helper with this process's stdout and stderr (its progress is the user's to read).
int run_helper(const std::vector<std::string>& args) {
  std::vector<std::string> argv = helper_argv(args);
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

// kopt's own checks on the staged folder: task.json parsed and validated, both kernels through
// the compile gate (device code only) and compiled. "" when sound, else every problem.
std::string staged_task_problems(const std::filesystem::path& dir, const std::string& arch_option) {
  auto task = load_task(dir);
  if (!task) return "the derived task.json fails kopt's validation:\n" + task.error();
  std::string arch = arch_option;
  if (arch.empty()) arch = detect_gpu_arch().value_or("sm_90a");
  CompileCache cache(cache_directory() / "compile");
  std::string problems;
  for (const auto& item : compile_check_task(dir, arch, &cache))
    if (!item.ok) problems += item.subject + ": " + item.message + "\n";
  return problems;
}

bool staged_task_sound(const std::filesystem::path& dir, const std::string& arch_option) {
  std::string problems = staged_task_problems(dir, arch_option);
  if (!problems.empty()) std::cerr << "kopt tasks import: " << problems;
  return problems.empty();
}

// The config's LLM when it has a coder, else nullopt with the reason printed.
std::optional<LlmConfig> coder_model() {
  auto config = load_config_or_defaults(std::nullopt);
  if (!config) {
    std::cerr << "kopt tasks import: " << config.error() << "\n";
    return std::nullopt;
  }
  if (!config->llm || !config->llm->agents.count("coder")) {
    std::cerr << "kopt tasks import: no --reference, and no coder model is configured to draft "
                 "one ("
              << (config->source.empty() ? std::string("no config file") : config->source.string())
              << "); give --reference FILE, a kernel file with its kopt:plan that computes the "
                 "module's outputs (it is validated against the module at every shape)\n";
    return std::nullopt;
  }
  return *config->llm;
}

// Drafts the reference with the coder model (one repair with the refusal's text), checks each
// draft with kopt's gate and validates it against the module. "" when one was accepted.
std::string draft_and_validate(const LlmConfig& llm, const std::filesystem::path& staging,
                               const std::string& arch) {
  std::string previous, failure;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto draft = draft_reference(llm, staging, previous, failure);
    if (!draft) return "drafting the reference: " + draft.error();
    previous = *draft;
    for (const char* file : {"reference.cu", "baseline.cu"}) {
      auto written = write_file_atomic(staging / file, *draft);
      if (!written) return written.error();
    }
    std::printf("drafted reference.cu with the coder model (attempt %d)\n", attempt + 1);
    failure = staged_task_problems(staging, arch);
    if (!failure.empty()) continue;
    auto run = run_command(helper_argv({staging.string(), "--validate-only", "--quiet",
                                        "--reference", (staging / "reference.cu").string()}),
                           "", std::chrono::hours(1));
    if (!run) return run.error();
    std::fputs(run->stdout_text.c_str(), stdout);
    if (run->exit_code == 0) return "";
    failure = run->stderr_text;
    if (run->exit_code != 1) return failure;
  }
  // Kept beside the suite (a file, never listed as a task) for the user to fix.
  std::filesystem::path keep =
      staging.parent_path() / (staging.filename().string().substr(8) + ".draft.cu");
  auto kept = write_file_atomic(keep, previous);
  return failure + "(the last draft " +
         (kept ? "is kept as " + keep.string() : "could not be kept: " + kept.error()) +
         "; fix it and pass it with --reference)\n";
}

int import_one(const ImportRequest& r) {
  std::filesystem::path file = r.files[0];
  std::string name = r.name.empty() ? file.stem().string() : r.name;
  if (!is_task_name(name)) {
    std::cerr << "kopt tasks import: task name '" << name << "': " << kTaskNameRule
              << " (give --name)\n";
    return 2;
  }
  std::optional<LlmConfig> llm;
  if (r.reference.empty() && !(llm = coder_model())) return 2;
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
  std::vector<std::string> args = {file.string(), "--out", staging.string(), "--name", name};
  if (llm)
    args.push_back("--derive-only");
  else
    args.insert(args.end(), {"--reference", r.reference});
  if (!r.function.empty()) args.insert(args.end(), {"--function", r.function});
  int code = run_helper(args);
  if (code != 0) {
    std::filesystem::remove_all(staging, ec);
    return code;
  }
  if (llm) {
    std::string refused = draft_and_validate(*llm, staging, r.arch);
    if (!refused.empty()) {
      std::cerr << "kopt tasks import: " << refused;
      std::filesystem::remove_all(staging, ec);
      return 1;
    }
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
  std::printf(
      "wrote %s (task.json, reference.cu, baseline.cu = the reference, torch_op.py, "
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
    // One final line per problem: the helper said "cannot import" for those it refused; these
    // get "imported" or "cannot import" here, after kopt's own checks.
    std::string name = staged.substr(8);
    std::filesystem::path target = r.tasks_root / name;
    std::string problems = std::filesystem::exists(target)
                               ? target.string() + " exists\n"
                               : staged_task_problems(entry.path(), r.arch);
    if (problems.empty()) {
      std::filesystem::rename(entry.path(), target, ec);
      if (ec) problems = "moving it to " + target.string() + ": " + ec.message() + "\n";
    }
    if (!problems.empty()) {
      std::printf("cannot import %s: %s", name.c_str(), problems.c_str());
      std::filesystem::remove_all(entry.path(), ec);
      code = 1;
      continue;
    }
    std::printf("imported %s -> %s\n", name.c_str(), target.c_str());
  }
  return code;
}

}  // namespace kopt::cli
