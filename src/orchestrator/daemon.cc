#include "src/orchestrator/daemon.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <iostream>
#include <tuple>

#include "agents/prompt_library.h"
#include "common/files.h"
#include "common/json_limits.h"
#include "common/option_errors.h"
#include "common/strings.h"
#include "llm/llm_service.h"
#include "llm/secret.h"
#include "memory_store/database_check.h"
#include "memory_store/memory_store.h"
#include "sandbox/confined/landlock.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/evaluator_pool.h"
#include "sandbox/sanitizer_runner.h"
#include "sandbox/task_catalog.h"
#include "src/orchestrator/daemon_lock.h"
#include "src/orchestrator/live_display.h"
#include "src/orchestrator/orchestrator.h"
#include "src/orchestrator/resume_plan.h"
#include "src/orchestrator/run_logging.h"
#include "src/orchestrator/run_settings.h"
#include "src/orchestrator/slurm_workers.h"

namespace kopt::orchestrator {

static_assert(static_cast<int>(ExitCode::kUnreadableDatabase) == memory::kExitUnreadableDatabase);

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Task folders from --tasks arguments: a task folder, a folder of task folders, or a task name
// under the default root.
Result<std::vector<std::filesystem::path>> resolve_tasks(const DaemonInvocation& invocation) {
  std::vector<std::string> args = invocation.tasks;
  if (args.empty()) args.push_back(invocation.default_tasks_root.string());
  std::vector<std::filesystem::path> dirs;
  for (const std::string& arg : args) {
    std::filesystem::path path(arg);
    std::error_code ec;
    if (std::filesystem::exists(path / "task.json", ec)) {
      dirs.push_back(std::filesystem::absolute(path, ec).lexically_normal());
      continue;
    }
    if (std::filesystem::is_directory(path, ec)) {
      // An entry that cannot be read (a symlink loop, a folder the user may not read) is
      // skipped, said here; the run goes on with the others.
      TaskListing listing = scan_task_dirs(path);
      for (const auto& bad : listing.unreadable) {
        std::cerr << "kopt run: skipping " << bad.path.string() << ": " << bad.reason << "\n";
      }
      const auto& found = listing.dirs;
      if (found.empty())
        return make_error("--tasks " + arg + ": no task folder (with a task.json) in it" +
                          (listing.error.empty() ? "" : " (" + listing.error + ")"));
      for (const auto& dir : found) {
        dirs.push_back(std::filesystem::absolute(dir, ec).lexically_normal());
      }
      continue;
    }
    auto dir = resolve_task_dir(arg, invocation.default_tasks_root);
    if (!dir) return make_error("--tasks " + arg + ": " + dir.error());
    dirs.push_back(std::filesystem::absolute(*dir, ec).lexically_normal());
  }
  return dirs;
}

// How many GPUs this machine's driver sees, or why there are none.
Result<int> local_gpu_count() {
  auto driver = load_cuda_driver();
  if (!driver) return make_error(driver.error());
  int count = 0;
  if ((*driver)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    return make_error("the NVIDIA driver sees no GPU; this command needs a GPU");
  }
  return count;
}

// Local workers need a GPU here: said once, before a run is recorded, rather than as every
// task's baseline failing in turn.
Status local_gpus_present(const Result<int>& count, const std::vector<int>& gpus) {
  if (!count) return make_error(count.error());
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= *count) {
      return make_error("GPU " + std::to_string(gpu) + " does not exist: this machine has " +
                        std::to_string(*count) + " (0.." + std::to_string(*count - 1) + ")");
    }
  }
  return ok_status();
}

}  // namespace

namespace {

cxxopts::Options run_options_parser(const std::string& program) {
  cxxopts::Options options(program,
                           "optimize the tasks' kernels until the budgets run out (the built-in "
                           "tuner alone when no LLM is configured)");
  options.add_options()("tasks", "task folders, or folders holding task folders (repeatable)",
                        cxxopts::value<std::vector<std::string>>())("hours", "wall-time budget",
                                                                    cxxopts::value<double>())(
      "max-usd", "LLM cost budget in US dollars", cxxopts::value<double>())(
      "max-usd-per-task", "LLM cost budget of each task (then it is parked)",
      cxxopts::value<double>())("max-usd-per-hour",
                                "spend-rate alarm: LLM work waits while the last 10 minutes "
                                "cost more than this per hour",
                                cxxopts::value<double>())(
      "candidates-per-task", "kernels judged per task at most", cxxopts::value<int64_t>())(
      "score",
      "what task weights and stopping read: auto (S against the production baseline where one "
      "was measured on this GPU model, else %SOL), sol_score or sol_percent",
      cxxopts::value<std::string>())(
      "gpus", "GPU indices, e.g. 0,1 (default: the config's, else every visible GPU)",
      cxxopts::value<std::string>())(
      "workers-per-gpu",
      "timing workers sharing each GPU in turns (default: the config's daemon.workers_per_gpu, "
      "else 1)",
      cxxopts::value<int64_t>())("config", "config file", cxxopts::value<std::string>())(
      "db", "memory database (default: the config's)", cxxopts::value<std::string>())(
      "resume", "continue the last run of this database")(
      "tuner-only", "use the built-in tuner even when an LLM is configured")(
      "allow-unconfined-compile",
      "run model-written kernels even where the kernel has no Landlock to confine the compiler")(
      "no-display", "plain log lines even on a terminal")(
      "log-level", "trace, debug, info, warn or error",
      cxxopts::value<std::string>()->default_value("info"))("h,help", "show this help");
  // `--tasks a b c` and bare folders both name tasks.
  options.parse_positional({"tasks"});
  options.positional_help("[TASKDIR...]");
  options.show_positional_help();  // --help lists --tasks too
  return options;
}

// --gpus 0,1: distinct indices; throws the option error otherwise.
std::vector<int> parse_gpu_list(const std::string& list) {
  std::vector<int> gpus;
  for (const std::string& part : split(list, ',')) {
    std::string t = trim(part);
    if (t.empty() || t.size() > 4 || t.find_first_not_of("0123456789") != std::string::npos) {
      throw cxxopts::exceptions::exception("--gpus: '" + t + "' is not a GPU index");
    }
    int gpu = std::stoi(t);
    // Two workers on one GPU would time each other's kernels.
    if (std::find(gpus.begin(), gpus.end(), gpu) != gpus.end()) {
      throw cxxopts::exceptions::exception("--gpus: GPU " + t + " is named twice");
    }
    gpus.push_back(gpu);
  }
  return gpus;
}

DaemonInvocation invocation_from(const cxxopts::ParseResult& args) {
  DaemonInvocation inv;
  if (args.count("tasks")) inv.tasks = args["tasks"].as<std::vector<std::string>>();
  if (args.count("hours")) inv.hours = args["hours"].as<double>();
  if (args.count("max-usd")) inv.max_usd = args["max-usd"].as<double>();
  if (args.count("max-usd-per-task")) inv.max_usd_per_task = args["max-usd-per-task"].as<double>();
  if (args.count("max-usd-per-hour")) inv.max_usd_per_hour = args["max-usd-per-hour"].as<double>();
  if (args.count("candidates-per-task")) {
    inv.candidates_per_task = args["candidates-per-task"].as<int64_t>();
  }
  if (args.count("gpus")) inv.gpus = parse_gpu_list(args["gpus"].as<std::string>());
  if (args.count("workers-per-gpu")) inv.workers_per_gpu = args["workers-per-gpu"].as<int64_t>();
  if (args.count("score")) {
    std::string name = args["score"].as<std::string>();
    inv.score = parse_score_basis(name);
    if (!inv.score) {
      throw cxxopts::exceptions::exception("--score: '" + name + "' is not one of " +
                                           join(score_basis_names(), ", "));
    }
  }
  if (args.count("config")) inv.config = args["config"].as<std::string>();
  if (args.count("db")) inv.db = args["db"].as<std::string>();
  inv.resume = args.count("resume") > 0;
  inv.tuner_only = args.count("tuner-only") > 0;
  inv.allow_unconfined_compile = args.count("allow-unconfined-compile") > 0;
  inv.no_display = args.count("no-display") > 0;
  inv.log_level = args["log-level"].as<std::string>();
  return inv;
}

// The values no option type refuses: the log level's name and each budget's range.
void check_invocation(const DaemonInvocation& inv) {
  const std::vector<std::string> levels = {"trace", "debug", "info", "warn", "error"};
  if (std::find(levels.begin(), levels.end(), inv.log_level) == levels.end()) {
    throw cxxopts::exceptions::exception("--log-level: '" + inv.log_level + "' is not a level (" +
                                         join(levels, ", ") + ")");
  }
  // Each budget named when it is meaningless: not a number, infinite, zero or negative.
  for (const auto& [flag, value, inclusive] :
       {std::tuple<const char*, std::optional<double>, bool>{"--hours", inv.hours, false},
        {"--max-usd", inv.max_usd, true},
        {"--max-usd-per-task", inv.max_usd_per_task, true},
        {"--max-usd-per-hour", inv.max_usd_per_hour, false}}) {
    if (!value) continue;
    if (auto fine = require_number_above(flag, *value, 0, inclusive); !fine) {
      throw cxxopts::exceptions::exception(fine.error());
    }
  }
  if (inv.workers_per_gpu &&
      (*inv.workers_per_gpu < 1 || *inv.workers_per_gpu > kMaxWorkersPerGpu)) {
    throw cxxopts::exceptions::exception("--workers-per-gpu: must be 1 to " +
                                         std::to_string(kMaxWorkersPerGpu) + " (got " +
                                         std::to_string(*inv.workers_per_gpu) + ")");
  }
  if (inv.candidates_per_task && *inv.candidates_per_task <= 0) {
    throw cxxopts::exceptions::exception("--candidates-per-task: must be at least 1 (got " +
                                         std::to_string(*inv.candidates_per_task) + ")");
  }
}

}  // namespace

std::optional<DaemonInvocation> parse_run_arguments(int argc, char** argv, int& exit_code,
                                                    const std::string& program) {
  cxxopts::Options options = run_options_parser(program);
  try {
    auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help() << "\n";
      exit_code = static_cast<int>(ExitCode::kOk);
      return std::nullopt;
    }
    DaemonInvocation inv = invocation_from(args);
    check_invocation(inv);
    return inv;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << program << ": " << describe_option_error(e, argc, argv) << " (see --help)\n";
    exit_code = static_cast<int>(ExitCode::kBadInput);
    return std::nullopt;
  }
}

namespace {

// A binary beside the running executable, else its name (searched in PATH).
std::string sibling_binary(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto sibling = self.parent_path() / name;
    if (std::filesystem::exists(sibling, ec)) return sibling.string();
  }
  return name;
}

// A database this run created, removed with its write-ahead files and lock file unless the run
// got as far as recording itself: a run that stops early (no GPU, a bad task, a broken prompt)
// leaves no empty memory behind for the morning's commands to find.
class NewDatabaseCleanup {
 public:
  explicit NewDatabaseCleanup(std::filesystem::path database) : database_(std::move(database)) {
    std::error_code ec;
    armed_ = !std::filesystem::exists(database_, ec) && !ec;
  }
  NewDatabaseCleanup(const NewDatabaseCleanup&) = delete;
  NewDatabaseCleanup& operator=(const NewDatabaseCleanup&) = delete;
  ~NewDatabaseCleanup() {
    if (!armed_) return;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) {
      std::filesystem::remove(database_.string() + suffix, ec);
    }
  }
  void keep() { armed_ = false; }

 private:
  std::filesystem::path database_;
  bool armed_ = false;
};

// Model text compiles in the confined kopt-compile child, which Landlock locks out of every
// file but the toolkit's where the kernel has it. Without Landlock the gate's checks are the only
// wall: said at start-up, and model-written kernels run only with the user's consent.
std::optional<ExitCode> refuse_unconfined_model_text(bool use_llm,
                                                     const DaemonInvocation& invocation) {
  std::string why = landlock_unavailable_reason();
  if (why.empty()) return std::nullopt;
  std::cerr << "kopt run: WARNING: " << why << ": " << kUnconfinedCompileWarning << "\n";
  if (!use_llm || invocation.allow_unconfined_compile) return std::nullopt;
  std::cerr << "kopt run: refusing to run model-written kernels without Landlock (pass "
               "--allow-unconfined-compile to accept the risk, or --tuner-only)\n";
  return ExitCode::kNoGpu;
}
}  // namespace

std::string default_worker_path(const std::string& configured) {
  return configured.empty() ? sibling_binary("kopt-sandbox") : configured;
}

Result<std::vector<SandboxOptions>> sandbox_options_for(const DaemonConfig& daemon,
                                                        const std::string& worker,
                                                        const std::vector<int>& gpus) {
  std::vector<SandboxOptions> all;
  const auto& tpl = daemon.worker_command;
  size_t worker_at = tpl.size();
  for (size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i].find("{worker}") != std::string::npos) worker_at = i;
  }
  if (!tpl.empty() && worker_at == tpl.size()) {
    return make_error("daemon.worker_command must contain {worker}, the kopt-sandbox binary");
  }
  for (int gpu : gpus) {
    SandboxOptions options;
    options.worker = worker;
    options.device = gpu;
    // Overnight, a GPU someone else is using is waited for (timing on it pauses), not measured.
    options.busy_retry_seconds = 900;
    if (!tpl.empty()) {
      // With a template, the template says everything: kopt adds no --device of its own,
      // because a scheduler (srun --gres=gpu:1) numbers the one GPU it grants as 0.
      auto fill = [&](const std::string& arg) {
        return replace_all(replace_all(arg, "{worker}", worker), "{gpu}", std::to_string(gpu));
      };
      options.command_prefix.clear();
      for (size_t i = 0; i < worker_at; ++i) options.command_prefix.push_back(fill(tpl[i]));
      options.worker = fill(tpl[worker_at]);
      for (size_t i = worker_at + 1; i < tpl.size(); ++i)
        options.extra_args.push_back(fill(tpl[i]));
      options.device = -1;
      options.leash = sibling_binary("kopt-leash");
    }
    options.label = "GPU " + std::to_string(gpu);
    all.push_back(std::move(options));
  }
  return all;
}

PoolWorkers pool_workers(const std::vector<SandboxOptions>& per_gpu, int64_t workers_per_gpu) {
  PoolWorkers pool;
  for (size_t gpu = 0; gpu < per_gpu.size(); ++gpu) {
    const SandboxOptions& one = per_gpu[gpu];
    int64_t k = workers_per_gpu;
    for (int64_t i = 1; i <= k; ++i) {
      SandboxOptions o = one;
      if (k > 1) {
        o.extra_args.push_back("--share-gpu");
        o.environment.push_back("KOPT_WORKERS_PER_GPU=" + std::to_string(k));
        o.label += " worker " + std::to_string(i) + "/" + std::to_string(k);
      }
      pool.members.push_back(std::move(o));
      pool.gpu_of_member.push_back(int(gpu));
    }
  }
  return pool;
}

namespace {

// What a step returns: nullopt to go on, else the code the daemon exits with.
using StepEnd = std::optional<ExitCode>;

// Says why the daemon stops and returns its exit code.
ExitCode refuse(ExitCode code, const std::string& why) {
  std::cerr << "kopt run: " << why << "\n";
  return code;
}

// `kopt run` as named steps over what they build, held in the order the daemon needs it torn
// down (the cleanup of a new database last, after its lock and store are closed).
class Daemon {
 public:
  Daemon(const DaemonInvocation& invocation, const DaemonHooks& hooks)
      : invocation_(invocation), hooks_(hooks) {}

  StepEnd open_database();
  StepEnd resolve_settings();
  StepEnd choose_gpus();
  StepEnd prepare_llm();
  StepEnd prepare_evaluator();
  StepEnd record_run();
  StepEnd start_logging();
  void build_workers();
  ExitCode search_and_report();

 private:
  void log_settings() const;
  OrchestratorDeps orchestrator_deps();
  void print_summary(const RunOutcome& outcome) const;

  const DaemonInvocation& invocation_;
  const DaemonHooks& hooks_;
  std::optional<Config> config_;
  std::filesystem::path db_path_;
  std::optional<NewDatabaseCleanup> cleanup_;
  std::optional<DaemonLock> lock_;
  std::optional<memory::MemoryStore> store_;
  std::optional<RunRecorder> recorder_;
  RunOptions options_;
  std::vector<SettingOrigin> origins_;  // where each setting came from, for the log
  std::optional<int64_t> resume_id_;
  std::vector<int> gpus_;
  std::string gpus_note_;  // how the GPUs were chosen inside a Slurm job, for the log
  std::optional<agents::PromptLibrary> prompts_;
  std::unique_ptr<LlmService> llm_;
  std::unique_ptr<Evaluator> evaluator_;
  EvaluatorPool* workers_ = nullptr;          // the real workers, for their utilization at the end
  std::vector<SandboxOptions> sandboxes_;     // checked early, built once the run has an id
  std::vector<SandboxOptions> lane_workers_;  // the sanitizer lane's: one per GPU
  int64_t workers_per_gpu_ = kDefaultWorkersPerGpu;  // timing workers sharing each GPU
  std::string workers_note_;  // why a template's workers stay one per GPU, for the log
  int64_t run_id_ = 0;
  std::shared_ptr<LiveDisplay> display_;
};

StepEnd Daemon::open_database() {
  auto config = load_config_or_defaults(invocation_.config);
  if (!config) return refuse(ExitCode::kBadInput, config.error());
  config_ = std::move(*config);
  db_path_ = database_path_for(invocation_.db, *config_);
  // Through symlinks to the real file, so that two names of one database share one lock.
  std::error_code canonical_error;
  if (auto real = std::filesystem::weakly_canonical(db_path_, canonical_error); !canonical_error) {
    db_path_ = real;
  }
  // A folder, a file that is not SQLite or a damaged database: refused before any lock file or
  // database is made, and never written.
  if (auto readable = memory::check_database_file(db_path_, /*thorough=*/true); !readable) {
    return refuse(ExitCode::kUnreadableDatabase, readable.error());
  }
  cleanup_.emplace(db_path_);
  auto lock = DaemonLock::acquire(db_path_);
  if (!lock) {
    cleanup_->keep();  // another daemon's database
    return refuse(ExitCode::kRunFailed, lock.error());
  }
  lock_.emplace(std::move(*lock));
  auto store = memory::MemoryStore::open(db_path_);
  if (!store) return refuse(ExitCode::kUnreadableDatabase, store.error());
  store_.emplace(std::move(*store));
  recorder_.emplace(*store_);
  return std::nullopt;
}

StepEnd Daemon::resolve_settings() {
  // The saved run's options when resuming (an empty object where its record holds none).
  std::optional<nlohmann::json> saved;
  if (invocation_.resume) {
    auto last = store_->latest_run();
    if (!last || !*last) {
      std::cerr << "kopt run --resume: "
                << (last ? "this database has no run to resume" : last.error()) << " ("
                << db_path_.string() << ")\n";
      return ExitCode::kBadInput;
    }
    resume_id_ = (*last)->id;
    auto waiting = waiting_submissions(store_->database());
    ResumePlan plan = plan_resume(**last, !invocation_.tasks.empty(),
                                  waiting ? *waiting : std::vector<Submission>{});
    if (plan.nothing_to_resume) {
      std::cout << plan.message;
      return ExitCode::kOk;
    }
    std::cerr << plan.message;
    auto record = parse_json_bounded((*last)->config_json);
    bool has_options = record.is_object() && record.contains("options");
    saved = has_options ? record["options"] : nlohmann::json::object();
  }
  SettingFlags flags{.hours = invocation_.hours,
                     .max_usd = invocation_.max_usd,
                     .candidates_per_task = invocation_.candidates_per_task,
                     .max_usd_per_task = invocation_.max_usd_per_task,
                     .max_usd_per_hour = invocation_.max_usd_per_hour,
                     .score = invocation_.score,
                     .workers_per_gpu = invocation_.workers_per_gpu,
                     .task_dirs = {}};
  // A new run's folders from --tasks (the default root without any); a resumed one's are saved.
  if (!resume_id_ || !invocation_.tasks.empty()) {
    auto dirs = resolve_tasks(invocation_);
    if (!dirs) return refuse(ExitCode::kBadInput, dirs.error());
    flags.task_dirs = std::move(*dirs);
  }
  ResolvedSettings resolved =
      resolve_run_settings(config_->daemon, flags, saved ? &*saved : nullptr);
  options_ = std::move(resolved.options);
  origins_ = std::move(resolved.origins);
  workers_per_gpu_ = resolved.workers_per_gpu;
  workers_note_ = std::move(resolved.workers_note);
  return std::nullopt;
}

StepEnd Daemon::choose_gpus() {
  // Default GPUs: every one this machine has for local workers (GPU 0 where there are none:
  // the test evaluator needs no GPU), GPU 0 for a worker command template.
  gpus_ = invocation_.gpus ? *invocation_.gpus : config_->daemon.gpus;
  const bool local_workers = config_->daemon.worker_command.empty();
  Result<int> count = local_workers ? local_gpu_count() : Result<int>(1);
  // Inside a Slurm job, the GPUs it was granted (numbered from 0, as the job's processes and
  // its steps see them), said in the log once logging is set up.
  if (gpus_.empty()) {
    if (auto grant = slurm_granted_gpus([](const char* name) { return std::getenv(name); })) {
      std::vector<std::string> indices;
      for (int i = 0; i < grant->gpus; ++i) {
        gpus_.push_back(i);
        indices.push_back(std::to_string(i));
      }
      gpus_note_ = "inside Slurm job " + grant->job_id + ": one worker for each of the " +
                   std::to_string(grant->gpus) + " GPU(s) it was granted (" + grant->source +
                   "), as --gpus " + join(indices, ",");
    }
  }
  if (gpus_.empty()) {
    for (int i = 0; i < (local_workers && count ? *count : 1); ++i) gpus_.push_back(i);
  }
  if (!hooks_.make_evaluator && local_workers) {
    if (auto present = local_gpus_present(count, gpus_); !present) {
      return refuse(ExitCode::kNoGpu,
                    present.error() +
                        "\n(to run the workers on other machines, set daemon.worker_command: see "
                        "\"Running overnight\" in README.md)");
    }
  }
  return std::nullopt;
}

// Prompts and the LLM are checked before any work: a broken template or a missing key is an
// error now, not at the first plan.
StepEnd Daemon::prepare_llm() {
  options_.use_llm = config_->llm.has_value() && !invocation_.tuner_only;
  if (auto refused = refuse_unconfined_model_text(options_.use_llm, invocation_)) return refused;
  if (!options_.use_llm) return std::nullopt;
  std::filesystem::path prompts_dir = config_->daemon.prompts_dir;
  if (!prompts_dir.empty() && prompts_dir.is_relative() && !config_->source.empty()) {
    prompts_dir = config_->source.parent_path() / prompts_dir;
  }
  auto loaded = agents::PromptLibrary::load(agents::default_prompts_dir(prompts_dir));
  if (!loaded) return refuse(ExitCode::kBadInput, loaded.error());
  prompts_ = std::move(*loaded);
  // Stored prompts and answers never hold a configured key's value.
  std::vector<Secret> keys;
  for (const auto& [name, provider] : config_->llm->providers) {
    if (provider.api_key_env.empty()) continue;
    if (auto key = Secret::from_env(provider.api_key_env)) keys.push_back(std::move(*key));
  }
  recorder_->set_scrubber([keys](const std::string& text) {
    std::string out = text;
    for (const Secret& key : keys) out = key.scrub(out);
    return out;
  });
  auto service = LlmService::create(*config_->llm, &*recorder_);
  if (!service) return refuse(ExitCode::kBadInput, service.error());
  llm_ = std::move(*service);
  return std::nullopt;
}

StepEnd Daemon::prepare_evaluator() {
  if (hooks_.make_evaluator) {
    auto made = hooks_.make_evaluator(*config_, gpus_);
    if (!made) return refuse(ExitCode::kBadInput, made.error());
    evaluator_ = std::move(*made);
    return std::nullopt;
  }
  // Checked now, built once the run has an id to name its Slurm jobs after.
  auto sandboxes =
      sandbox_options_for(config_->daemon, default_worker_path(config_->daemon.worker), gpus_);
  if (!sandboxes) return refuse(ExitCode::kBadInput, sandboxes.error());
  sandboxes_ = std::move(*sandboxes);
  return std::nullopt;
}

// The run's record first, so that its folder (and log) exists from the first line on.
StepEnd Daemon::record_run() {
  if (resume_id_) {
    run_id_ = *resume_id_;
  } else {
    nlohmann::json extra = {{"config", describe(*config_)}, {"gpus", gpus_}};
    auto id = recorder_->start_run(dump_json(run_record_json(options_, extra)));
    if (!id) return refuse(ExitCode::kRunFailed, "cannot record the run: " + id.error());
    run_id_ = *id;
  }
  cleanup_->keep();
  return std::nullopt;
}

StepEnd Daemon::start_logging() {
  auto run_dir = run_directory(db_path_, run_id_);
  if (!run_dir) return refuse(ExitCode::kRunFailed, run_dir.error());
  if (!invocation_.no_display && is_interactive_terminal(stderr)) {
    display_ = std::make_shared<LiveDisplay>(stderr);
  }
  if (auto s = setup_run_logging(*run_dir, display_, invocation_.log_level); !s) {
    return refuse(ExitCode::kRunFailed, s.error());
  }
  spdlog::info("kopt {} run {}: database {}, log {}", KOPT_VERSION, run_id_, db_path_.string(),
               (*run_dir / "kopt.log").string());
  log_settings();
  return std::nullopt;
}

void Daemon::log_settings() const {
  // The effective settings, not the file's: --db, $KOPT_DB, --hours and the other flags win.
  Config effective = *config_;
  effective.database_path = db_path_;
  effective.daemon.budgets.hours = options_.budgets.hours;
  effective.daemon.budgets.max_usd = options_.budgets.max_usd;
  effective.daemon.budgets.candidates_per_task = options_.budgets.candidates_per_task;
  effective.daemon.budgets.max_usd_per_task = options_.budgets.max_usd_per_task;
  effective.daemon.budgets.max_usd_per_hour = options_.budgets.max_usd_per_hour;
  effective.daemon.gpus = gpus_;
  for (const auto& line : split(describe(effective), '\n')) {
    if (!trim(line).empty()) spdlog::info("config: {}", line);
  }
  for (const SettingOrigin& origin : origins_) spdlog::info("setting: {}", origin.describe());
  if (!options_.use_llm) {
    spdlog::info(config_->llm ? "--tuner-only: the LLM agents stay idle"
                              : "no LLM configured: the built-in tuner works alone");
  }
  if (!gpus_note_.empty()) spdlog::info("{}", gpus_note_);
  // The effective basis (--score wins over the file), which the per-task lines then apply.
  spdlog::info("search: score {}, sol_score_threshold {:.2f}, sol_threshold_percent {:.0f}",
               score_basis_name(options_.search.score), options_.search.sol_score_threshold,
               options_.search.sol_threshold_percent);
}

// workers_per_gpu kopt-sandbox workers per GPU in a pool, and one sanitizer lane worker per GPU.
void Daemon::build_workers() {
  if (evaluator_) return;
  for (size_t i = 0; i < sandboxes_.size(); ++i) {
    SandboxOptions o = sandboxes_[i];
    o.label = "sanitizer on GPU " + std::to_string(gpus_[i]);
    lane_workers_.push_back(std::move(o));
    name_srun_job(sandboxes_[i].command_prefix, run_id_, gpus_[i]);
  }
  if (!workers_note_.empty()) spdlog::warn("{}", workers_note_);
  PoolWorkers workers = pool_workers(sandboxes_, workers_per_gpu_);
  std::vector<std::unique_ptr<Evaluator>> members;
  for (SandboxOptions& o : workers.members)
    members.push_back(std::make_unique<SandboxEvaluator>(std::move(o)));
  auto pool = std::make_unique<EvaluatorPool>(std::move(members), std::move(workers.gpu_of_member));
  workers_ = pool.get();
  evaluator_ = std::move(pool);
}

OrchestratorDeps Daemon::orchestrator_deps() {
  OrchestratorDeps deps;
  deps.recorder = &*recorder_;
  deps.evaluator = evaluator_.get();
  deps.evaluator_slots = static_cast<int>(gpus_.size() * size_t(workers_per_gpu_));
  deps.workers_per_gpu = static_cast<int>(workers_per_gpu_);
  spdlog::info("{} worker{} per GPU on {} GPU(s){}", workers_per_gpu_,
               workers_per_gpu_ == 1 ? "" : "s", gpus_.size(),
               workers_per_gpu_ == 1 ? ""
                                     : ": verification overlaps, timing takes turns (each "
                                       "worker's timing has the GPU alone)");
  deps.llm = llm_.get();
  deps.prompts = prompts_ ? &*prompts_ : nullptr;
  if (config_->llm) {
    if (const AgentConfig* coder = config_->llm->agent("coder")) deps.coder_model = coder->model;
  }
  deps.stop = &StopSignal::install();
  LlmService* service = llm_.get();
  deps.cancel_llm = [service] {
    if (service) service->shutdown();
  };
  if (display_)
    deps.on_progress = [display = display_](const RunProgress& p) { display->update(p); };
  if (!lane_workers_.empty()) {
    // compute-sanitizer in worker processes of its own, one lane per GPU: a new best's tools no
    // longer hold a job slot (sanitizer_lane.h). By default the lane's worker runs beside the
    // timing worker on the same GPU, computing only between the GPU's timing turns
    // (sandbox/gpu_turn.h). KOPT_SANITIZER_LANE=hold makes each pass take its GPU from the pool
    // like an evaluation; =concurrent runs it beside without yielding, for measuring what that
    // costs (timing then finds the GPU busy).
    SanitizerLaneMode mode = sanitizer_lane_mode(std::getenv("KOPT_SANITIZER_LANE"));
    if (mode == SanitizerLaneMode::kHold && workers_per_gpu_ > 1) {
      // Holding one co-worker does not hold its GPU: the others would time beside the tools.
      spdlog::warn("KOPT_SANITIZER_LANE=hold with {} workers per GPU: the lane yields instead",
                   workers_per_gpu_);
      mode = SanitizerLaneMode::kYield;
    }
    std::vector<SandboxOptions> lane_workers = lane_worker_options(lane_workers_, mode);
    Evaluator* pool = evaluator_.get();
    SanitizerOptions beside = lane_sanitizer_options(mode);
    deps.sanitize = [lane_workers, mode, pool, beside](const EvalRequest& request, int lane) {
      if (mode == SanitizerLaneMode::kHold) return pool->sanitize(request);
      return run_sanitizers(request, lane_workers[static_cast<size_t>(lane) % lane_workers.size()],
                            beside);
    };
    deps.sanitizer_lanes = static_cast<int>(lane_workers_.size());
    spdlog::info("sanitizer lane: {} lane(s), {}", lane_workers_.size(),
                 describe_sanitizer_lane_mode(mode));
  }
  if (workers_) {
    deps.gpu_busy_fraction = [workers = workers_]() -> std::optional<double> {
      auto u = workers->utilization();
      if (u.evaluations == 0) return std::nullopt;
      return 1.0 - u.idle_fraction();
    };
  }
  return deps;
}

void Daemon::print_summary(const RunOutcome& outcome) const {
  for (const std::string& line : render_progress(outcome.progress)) {
    std::printf("%s\n", line.c_str());
  }
  if (workers_) {
    auto u = workers_->utilization();
    if (u.evaluations > 0) {
      // A GPU is idle while none of its workers evaluates (bench/daemon_throughput.py reads it).
      std::string line = fmt::format(
          "GPU workers idle {:.1f}% of the {:.0f} s between the first and the last evaluation "
          "({} evaluations on {} GPU(s))",
          100 * u.idle_fraction(), u.span_seconds, u.evaluations, u.gpus);
      if (workers_per_gpu_ > 1)
        line += fmt::format("; {} workers per GPU, each idle {:.1f}%", workers_per_gpu_,
                            100 * u.member_idle_fraction());
      spdlog::info("{}", line);
      std::printf("%s\n", line.c_str());
    }
  }
  if (outcome.progress.sanitizer_runs > 0 || outcome.progress.sanitizer_pending > 0) {
    std::printf("sanitizer lane: %lld passes, %lld not finished\n",
                static_cast<long long>(outcome.progress.sanitizer_runs),
                static_cast<long long>(outcome.progress.sanitizer_pending));
  }
  if (outcome.abandoned_jobs > 0) {
    // What the end cut short (the log says which kernels stay provisional).
    int64_t passes = std::min<int64_t>(outcome.progress.sanitizer_pending, outcome.abandoned_jobs);
    std::printf(
        "cut at the end: %lld jobs in flight (not stored), %lld sanitizer passes (their "
        "kernels stay provisional)\n",
        static_cast<long long>(outcome.abandoned_jobs - passes), static_cast<long long>(passes));
  }
  std::printf("run %lld %s: %s\n", static_cast<long long>(outcome.run_id),
              run_status_name(outcome.status).c_str(), outcome.stop_reason.c_str());
  std::fflush(stdout);
}

ExitCode Daemon::search_and_report() {
  CompileCache cache(cache_directory() / "compile");
  OrchestratorDeps deps = orchestrator_deps();
  deps.compile_cache = &cache;
  Orchestrator orchestrator(options_, deps);
  auto outcome = orchestrator.run(resume_id_);
  if (display_) display_->finish();
  if (!outcome) {
    spdlog::error("{}", outcome.error());
    return ExitCode::kBadInput;
  }
  print_summary(*outcome);
  ExitCode code = outcome->status == RunStatus::kFailed ? ExitCode::kRunFailed : ExitCode::kOk;
  if (outcome->abandoned_jobs > 0) {
    // Threads still wait on evaluations that missed the drain deadline; everything they could
    // lose is already in the database, so leave without unwinding them.
    spdlog::shutdown();
    std::_Exit(static_cast<int>(code));
  }
  return code;
}

}  // namespace

ExitCode run_daemon(const DaemonInvocation& invocation, const DaemonHooks& hooks) {
  Daemon daemon(invocation, hooks);
  for (auto step : {&Daemon::open_database, &Daemon::resolve_settings, &Daemon::choose_gpus,
                    &Daemon::prepare_llm, &Daemon::prepare_evaluator, &Daemon::record_run,
                    &Daemon::start_logging}) {
    if (StepEnd end = (daemon.*step)()) return *end;
  }
  daemon.build_workers();
  return daemon.search_and_report();
}

}  // namespace kopt::orchestrator
