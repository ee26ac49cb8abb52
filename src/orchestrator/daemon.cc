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
#include "memory_store/database_check.h"
#include "memory_store/memory_store.h"
#include "sandbox/confined/landlock.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/evaluator_pool.h"
#include "sandbox/sanitizer_runner.h"
#include "sandbox/task_catalog.h"
#include "src/llm/llm_service.h"
#include "src/llm/secret.h"
#include "src/orchestrator/daemon_lock.h"
#include "src/orchestrator/live_display.h"
#include "src/orchestrator/orchestrator.h"
#include "src/orchestrator/resume_plan.h"
#include "src/orchestrator/run_logging.h"
#include "src/orchestrator/slurm_workers.h"

namespace kopt::orchestrator {

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

void apply_config(const DaemonConfig& d, RunOptions& options) {
  SearchSettings& s = options.search;
  auto set = [](auto& target, const auto& value) {
    if (value) target = static_cast<std::decay_t<decltype(target)>>(*value);
  };
  set(s.beam_width, d.search.beam_width);
  set(s.plans_per_iteration, d.search.plans_per_iteration);
  set(s.max_repairs, d.search.max_repairs);
  set(s.memory_examples, d.search.memory_examples);
  set(s.plateau_candidates, d.search.plateau_candidates);
  set(s.tuner_max_configs, d.search.tuner_max_configs);
  set(s.warm_start_kernels, d.search.warm_start_kernels);
  set(s.plateau_plans, d.search.plateau_plans);
  set(s.exploration, d.search.exploration);
  set(options.llm_concurrency, d.llm_concurrency);
  set(s.sol_threshold_percent, d.search.sol_threshold_percent);
  set(s.sol_score_threshold, d.search.sol_score_threshold);
  // The config reader accepted only the names parse_score_basis knows.
  if (auto basis = parse_score_basis(d.search.score)) s.score = *basis;
  set(options.max_in_flight, d.max_in_flight);
  options.keep_prompts = d.keep_prompts;
  set(options.drain_seconds, d.drain_s);
  options.budgets.hours = d.budgets.hours;
  options.budgets.max_usd = d.budgets.max_usd;
  options.budgets.candidates_per_task = d.budgets.candidates_per_task;
  options.budgets.max_usd_per_task = d.budgets.max_usd_per_task;
  options.budgets.max_usd_per_hour = d.budgets.max_usd_per_hour;
  set(options.budgets.spend_rate_window_s, d.budgets.spend_rate_window_s);
  StallSettings& st = options.stall;
  auto set_ms = [](std::chrono::milliseconds& target, const std::optional<double>& seconds) {
    if (seconds) target = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  };
  set(st.window, d.stall.window);
  set(st.min_calls, d.stall.min_calls);
  set(st.park_dry_calls, d.stall.park_dry_calls);
  set(st.planner_stale_answers, d.stall.planner_stale_answers);
  set(st.min_new_share, d.stall.min_new_share);
  set(st.park_new_share, d.stall.park_new_share);
  set(st.temperature_step, d.stall.temperature_step);
  set_ms(st.backoff_initial, d.stall.backoff_initial_s);
  set_ms(st.backoff_max, d.stall.backoff_max_s);
}

}  // namespace

std::optional<DaemonInvocation> parse_run_arguments(int argc, char** argv, int& exit_code,
                                                    const std::string& program) {
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
      cxxopts::value<std::string>())("config", "config file", cxxopts::value<std::string>())(
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
  try {
    auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help() << "\n";
      exit_code = 0;
      return std::nullopt;
    }
    DaemonInvocation inv;
    if (args.count("tasks")) inv.tasks = args["tasks"].as<std::vector<std::string>>();
    if (args.count("hours")) inv.hours = args["hours"].as<double>();
    if (args.count("max-usd")) inv.max_usd = args["max-usd"].as<double>();
    if (args.count("max-usd-per-task"))
      inv.max_usd_per_task = args["max-usd-per-task"].as<double>();
    if (args.count("max-usd-per-hour"))
      inv.max_usd_per_hour = args["max-usd-per-hour"].as<double>();
    if (args.count("candidates-per-task")) {
      inv.candidates_per_task = args["candidates-per-task"].as<int64_t>();
    }
    if (args.count("gpus")) {
      std::vector<int> gpus;
      for (const std::string& part : split(args["gpus"].as<std::string>(), ',')) {
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
      inv.gpus = gpus;
    }
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
    if (inv.candidates_per_task && *inv.candidates_per_task <= 0) {
      throw cxxopts::exceptions::exception("--candidates-per-task: must be at least 1 (got " +
                                           std::to_string(*inv.candidates_per_task) + ")");
    }
    return inv;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << program << ": " << describe_option_error(e, argc, argv) << " (see --help)\n";
    exit_code = 2;
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
int refuse_unconfined_model_text(bool use_llm, const DaemonInvocation& invocation) {
  std::string why = landlock_unavailable_reason();
  if (why.empty()) return 0;
  std::cerr << "kopt run: WARNING: " << why << ": " << kUnconfinedCompileWarning << "\n";
  if (!use_llm || invocation.allow_unconfined_compile) return 0;
  std::cerr << "kopt run: refusing to run model-written kernels without Landlock (pass "
               "--allow-unconfined-compile to accept the risk, or --tuner-only)\n";
  return 3;
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

int run_daemon(const DaemonInvocation& invocation, const DaemonHooks& hooks) {
  auto config = load_config_or_defaults(invocation.config);
  if (!config) {
    std::cerr << "kopt run: " << config.error() << "\n";
    return 2;
  }
  std::filesystem::path db_path = database_path_for(invocation.db, *config);
  // Through symlinks to the real file, so that two names of one database share one lock.
  std::error_code canonical_error;
  if (auto real = std::filesystem::weakly_canonical(db_path, canonical_error); !canonical_error) {
    db_path = real;
  }
  // A folder, a file that is not SQLite or a damaged database: refused before any lock file or
  // database is made, and never written.
  if (auto readable = memory::check_database_file(db_path, /*thorough=*/true); !readable) {
    std::cerr << "kopt run: " << readable.error() << "\n";
    return memory::kExitUnreadableDatabase;
  }
  NewDatabaseCleanup cleanup(db_path);
  auto lock = DaemonLock::acquire(db_path);
  if (!lock) {
    cleanup.keep();  // another daemon's database
    std::cerr << "kopt run: " << lock.error() << "\n";
    return 1;
  }
  auto store = memory::MemoryStore::open(db_path);
  if (!store) {
    std::cerr << "kopt run: " << store.error() << "\n";
    return memory::kExitUnreadableDatabase;
  }
  RunRecorder recorder(*store);

  RunOptions options;
  apply_config(config->daemon, options);
  std::optional<int64_t> resume_id;
  if (invocation.resume) {
    auto last = store->latest_run();
    if (!last || !*last) {
      std::cerr << "kopt run --resume: "
                << (last ? "this database has no run to resume" : last.error()) << " ("
                << db_path.string() << ")\n";
      return 2;
    }
    resume_id = (*last)->id;
    auto waiting = waiting_submissions(store->database());
    ResumePlan plan = plan_resume(**last, !invocation.tasks.empty(),
                                  waiting ? *waiting : std::vector<Submission>{});
    if (plan.nothing_to_resume) {
      std::cout << plan.message;
      return 0;
    }
    std::cerr << plan.message;
    auto saved = parse_json_bounded((*last)->config_json);
    if (saved.is_object() && saved.contains("options")) {
      // Budgets from the command line and the config win over the saved ones.
      if (invocation.hours) options.budgets.hours = invocation.hours;
      if (invocation.max_usd) options.budgets.max_usd = invocation.max_usd;
      if (invocation.candidates_per_task) {
        options.budgets.candidates_per_task = invocation.candidates_per_task;
      }
      apply_saved_options(saved["options"], options);
    }
  }
  if (!resume_id || !invocation.tasks.empty()) {
    auto dirs = resolve_tasks(invocation);
    if (!dirs) {
      std::cerr << "kopt run: " << dirs.error() << "\n";
      return 2;
    }
    if (resume_id) {
      for (const auto& dir : *dirs) {
        if (std::find(options.task_dirs.begin(), options.task_dirs.end(), dir) ==
            options.task_dirs.end()) {
          options.task_dirs.push_back(dir);
        }
      }
    } else {
      options.task_dirs = *dirs;
    }
  }
  if (invocation.hours) options.budgets.hours = invocation.hours;
  if (invocation.max_usd) options.budgets.max_usd = invocation.max_usd;
  if (invocation.candidates_per_task) {
    options.budgets.candidates_per_task = invocation.candidates_per_task;
  }
  if (invocation.max_usd_per_task) options.budgets.max_usd_per_task = invocation.max_usd_per_task;
  if (invocation.max_usd_per_hour) options.budgets.max_usd_per_hour = invocation.max_usd_per_hour;
  if (invocation.score) options.search.score = *invocation.score;

  // Default GPUs: every one this machine has for local workers (GPU 0 where there are none:
  // the test evaluator needs no GPU), GPU 0 for a worker command template.
  std::vector<int> gpus = invocation.gpus ? *invocation.gpus : config->daemon.gpus;
  const bool local_workers = config->daemon.worker_command.empty();
  Result<int> count = local_workers ? local_gpu_count() : Result<int>(1);
  // Inside a Slurm job, the GPUs it was granted (numbered from 0, as the job's processes and
  // its steps see them), said in the log once logging is set up.
  std::string gpus_note;
  if (gpus.empty()) {
    if (auto grant = slurm_granted_gpus([](const char* name) { return std::getenv(name); })) {
      std::vector<std::string> indices;
      for (int i = 0; i < grant->gpus; ++i) {
        gpus.push_back(i);
        indices.push_back(std::to_string(i));
      }
      gpus_note = "inside Slurm job " + grant->job_id + ": one worker for each of the " +
                  std::to_string(grant->gpus) + " GPU(s) it was granted (" + grant->source +
                  "), as --gpus " + join(indices, ",");
    }
  }
  if (gpus.empty()) {
    for (int i = 0; i < (local_workers && count ? *count : 1); ++i) gpus.push_back(i);
  }
  if (!hooks.make_evaluator && local_workers) {
    if (auto present = local_gpus_present(count, gpus); !present) {
      std::cerr << "kopt run: " << present.error()
                << "\n(to run the workers on other machines, set daemon.worker_command: see "
                   "\"Running overnight\" in README.md)\n";
      return 3;
    }
  }

  // Prompts and the LLM are checked before any work: a broken template or a missing key is an
  // error now, not at the first plan.
  options.use_llm = config->llm.has_value() && !invocation.tuner_only;
  if (int refused = refuse_unconfined_model_text(options.use_llm, invocation); refused)
    return refused;
  std::optional<agents::PromptLibrary> prompts;
  std::unique_ptr<LlmService> llm;
  if (options.use_llm) {
    std::filesystem::path prompts_dir = config->daemon.prompts_dir;
    if (!prompts_dir.empty() && prompts_dir.is_relative() && !config->source.empty()) {
      prompts_dir = config->source.parent_path() / prompts_dir;
    }
    auto loaded = agents::PromptLibrary::load(agents::default_prompts_dir(prompts_dir));
    if (!loaded) {
      std::cerr << "kopt run: " << loaded.error() << "\n";
      return 2;
    }
    prompts = std::move(*loaded);
    // Stored prompts and answers never hold a configured key's value.
    std::vector<Secret> keys;
    for (const auto& [name, provider] : config->llm->providers) {
      if (provider.api_key_env.empty()) continue;
      if (auto key = Secret::from_env(provider.api_key_env)) keys.push_back(std::move(*key));
    }
    recorder.set_scrubber([keys](const std::string& text) {
      std::string out = text;
      for (const Secret& key : keys) out = key.scrub(out);
      return out;
    });
    auto service = LlmService::create(*config->llm, &recorder);
    if (!service) {
      std::cerr << "kopt run: " << service.error() << "\n";
      return 2;
    }
    llm = std::move(*service);
  }

  std::unique_ptr<Evaluator> evaluator;
  EvaluatorPool* workers = nullptr;  // the real workers, for their utilization at the end
  if (hooks.make_evaluator) {
    auto made = hooks.make_evaluator(*config, gpus);
    if (!made) {
      std::cerr << "kopt run: " << made.error() << "\n";
      return 2;
    }
    evaluator = std::move(*made);
  }
  // Checked now, built once the run has an id to name its Slurm jobs after.
  Result<std::vector<SandboxOptions>> sandboxes = std::vector<SandboxOptions>{};
  if (!hooks.make_evaluator) {
    sandboxes =
        sandbox_options_for(config->daemon, default_worker_path(config->daemon.worker), gpus);
    if (!sandboxes) {
      std::cerr << "kopt run: " << sandboxes.error() << "\n";
      return 2;
    }
  }

  // The run's record first, so that its folder (and log) exists from the first line on.
  int64_t run_id = 0;
  if (resume_id) {
    run_id = *resume_id;
  } else {
    nlohmann::json extra = {{"config", describe(*config)}, {"gpus", gpus}};
    auto id = recorder.start_run(dump_json(run_record_json(options, extra)));
    if (!id) {
      std::cerr << "kopt run: cannot record the run: " << id.error() << "\n";
      return 1;
    }
    run_id = *id;
  }
  cleanup.keep();
  auto run_dir = run_directory(db_path, run_id);
  if (!run_dir) {
    std::cerr << "kopt run: " << run_dir.error() << "\n";
    return 1;
  }
  std::shared_ptr<LiveDisplay> display;
  if (!invocation.no_display && is_interactive_terminal(stderr)) {
    display = std::make_shared<LiveDisplay>(stderr);
  }
  if (auto s = setup_run_logging(*run_dir, display, invocation.log_level); !s) {
    std::cerr << "kopt run: " << s.error() << "\n";
    return 1;
  }
  spdlog::info("kopt {} run {}: database {}, log {}", KOPT_VERSION, run_id, db_path.string(),
               (*run_dir / "kopt.log").string());
  // The effective settings, not the file's: --db, $KOPT_DB, --hours and the other flags win.
  Config effective = *config;
  effective.database_path = db_path;
  effective.daemon.budgets.hours = options.budgets.hours;
  effective.daemon.budgets.max_usd = options.budgets.max_usd;
  effective.daemon.budgets.candidates_per_task = options.budgets.candidates_per_task;
  effective.daemon.budgets.max_usd_per_task = options.budgets.max_usd_per_task;
  effective.daemon.budgets.max_usd_per_hour = options.budgets.max_usd_per_hour;
  effective.daemon.gpus = gpus;
  for (const auto& line : split(describe(effective), '\n')) {
    if (!trim(line).empty()) spdlog::info("config: {}", line);
  }
  if (!options.use_llm) {
    spdlog::info(config->llm ? "--tuner-only: the LLM agents stay idle"
                             : "no LLM configured: the built-in tuner works alone");
  }
  if (!gpus_note.empty()) spdlog::info("{}", gpus_note);
  // The effective basis (--score wins over the file), which the per-task lines then apply.
  spdlog::info("search: score {}, sol_score_threshold {:.2f}, sol_threshold_percent {:.0f}",
               score_basis_name(options.search.score), options.search.sol_score_threshold,
               options.search.sol_threshold_percent);
  std::vector<SandboxOptions> lane_workers;  // the sanitizer lane's: one per GPU
  if (!evaluator) {
    for (size_t i = 0; i < sandboxes->size(); ++i) {
      SandboxOptions o = (*sandboxes)[i];
      o.label = "sanitizer on GPU " + std::to_string(gpus[i]);
      lane_workers.push_back(std::move(o));
    }
    std::vector<std::unique_ptr<Evaluator>> members;
    for (size_t i = 0; i < sandboxes->size(); ++i) {
      SandboxOptions& o = (*sandboxes)[i];
      name_srun_job(o.command_prefix, run_id, gpus[i]);
      members.push_back(std::make_unique<SandboxEvaluator>(std::move(o)));
    }
    auto pool = std::make_unique<EvaluatorPool>(std::move(members));
    workers = pool.get();
    evaluator = std::move(pool);
  }

  CompileCache cache(cache_directory() / "compile");
  OrchestratorDeps deps;
  deps.recorder = &recorder;
  deps.evaluator = evaluator.get();
  deps.evaluator_slots = static_cast<int>(gpus.size());
  deps.llm = llm.get();
  deps.prompts = prompts ? &*prompts : nullptr;
  if (config->llm) {
    if (const AgentConfig* coder = config->llm->agent("coder")) deps.coder_model = coder->model;
  }
  deps.compile_cache = &cache;
  deps.stop = &StopSignal::install();
  LlmService* service = llm.get();
  deps.cancel_llm = [service] {
    if (service) service->shutdown();
  };
  if (display) deps.on_progress = [display](const RunProgress& p) { display->update(p); };
  if (!lane_workers.empty()) {
    // compute-sanitizer in worker processes of its own, one lane per GPU: a new best's 30 s of
    // tools no longer hold a job slot (sanitizer_lane.h). By default a pass takes its GPU from
    // the pool like an evaluation (the GPU is never shared while a candidate is timed: the
    // timing workers' quiet-GPU check would call it busy); KOPT_SANITIZER_LANE=concurrent runs
    // it beside the timing workers on the same GPU, for measuring what that costs.
    const char* lane_mode = std::getenv("KOPT_SANITIZER_LANE");
    bool concurrent = lane_mode && std::string(lane_mode) == "concurrent";
    Evaluator* pool = evaluator.get();
    deps.sanitize = [lane_workers, concurrent, pool](const EvalRequest& request, int lane) {
      if (!concurrent) return pool->sanitize(request);
      return run_sanitizers(request, lane_workers[static_cast<size_t>(lane) % lane_workers.size()]);
    };
    deps.sanitizer_lanes = static_cast<int>(lane_workers.size());
    spdlog::info("sanitizer lane: {} lane(s), {}", lane_workers.size(),
                 concurrent ? "beside the timing workers (KOPT_SANITIZER_LANE=concurrent)"
                            : "each pass holding its GPU like an evaluation");
  }
  if (workers) {
    deps.gpu_busy_fraction = [workers]() -> std::optional<double> {
      auto u = workers->utilization();
      if (u.evaluations == 0) return std::nullopt;
      return 1.0 - u.idle_fraction();
    };
  }

  Orchestrator orchestrator(options, deps);
  auto outcome = orchestrator.run(resume_id);
  if (display) display->finish();
  if (!outcome) {
    spdlog::error("{}", outcome.error());
    return 2;
  }
  for (const std::string& line : render_progress(outcome->progress)) {
    std::printf("%s\n", line.c_str());
  }
  if (workers) {
    auto u = workers->utilization();
    if (u.evaluations > 0) {
      std::string line = fmt::format(
          "GPU workers idle {:.1f}% of the {:.0f} s between the first and the last evaluation "
          "({} evaluations on {} GPU(s))",
          100 * u.idle_fraction(), u.span_seconds, u.evaluations, u.members);
      spdlog::info("{}", line);
      std::printf("%s\n", line.c_str());
    }
  }
  if (outcome->progress.sanitizer_runs > 0 || outcome->progress.sanitizer_pending > 0) {
    std::printf("sanitizer lane: %lld passes, %lld not finished\n",
                static_cast<long long>(outcome->progress.sanitizer_runs),
                static_cast<long long>(outcome->progress.sanitizer_pending));
  }
  std::printf("run %lld %s: %s\n", static_cast<long long>(outcome->run_id), outcome->status.c_str(),
              outcome->stop_reason.c_str());
  std::fflush(stdout);
  int code = parse_run_status(outcome->status) == RunStatus::kFailed ? 1 : 0;
  if (outcome->abandoned_jobs > 0) {
    // Threads still wait on evaluations that missed the drain deadline; everything they could
    // lose is already in the database, so leave without unwinding them.
    spdlog::shutdown();
    std::_Exit(code);
  }
  return code;
}

}  // namespace kopt::orchestrator
