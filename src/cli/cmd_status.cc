// kopt status [--db PATH] [--run ID] [--json] [--watch [--every S]]: the state of the daemon's run,
// read from the database from any shell while the daemon works (or after it stopped).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "common/json_limits.h"
#include "common/sol_score.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "memory_store/database_check.h"
#include "memory_store/memory_store.h"
#include "memory_store/production_baselines.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/cli/status_counts.h"
#include "src/orchestrator/daemon_lock.h"
#include "src/orchestrator/daemon_tables.h"
#include "src/orchestrator/progress.h"

namespace kopt::cli {

namespace {

// Each task's best kernel against the best production baseline measured for it on the run's
// GPU (kopt baselines), with %SOL and S: the progress table says how far from baseline.cu, this
// says how far from what users run.
Standing task_standing(sql::Database& db, const std::string& gpu,
                       const orchestrator::TaskProgress& t) {
  std::optional<ProductionReference> production;
  auto best = memory::best_production_baseline(db, t.name, gpu);
  if (best && *best) production = ProductionReference{(*best)->name, (*best)->median_us};
  Standing s = standing(t.best_us, t.best_us * t.best_speedup,
                        t.best_us * t.best_sol_percent / 100.0, production);
  if (auto missing = memory::libraries_not_installed(db, t.name, gpu)) s.not_installed = *missing;
  return s;
}

// A run's published progress and when it was written: the daemon_status row, or for a run that
// stopped before its first status, what its record says. Prints the error and sets `code`.
std::optional<std::pair<orchestrator::RunProgress, std::string>> read_progress(
    memory::MemoryStore& store, std::optional<int64_t> run_id, const std::filesystem::path& db_path,
    int& code) {
  auto row = orchestrator::read_status(store.database(), run_id);
  if (!row) {
    std::cerr << "kopt status: " << row.error() << "\n";
    code = 2;
    return std::nullopt;
  }
  if (*row) {
    auto parsed = nlohmann::json::parse((*row)->status_json, nullptr, false);
    return std::pair{orchestrator::RunProgress::from_json(
                         parsed.is_object() ? parsed : nlohmann::json::object()),
                     (*row)->updated_at};
  }
  auto run = run_id ? store.run(*run_id) : store.latest_run();
  if (!run || !*run) {
    std::cerr << "kopt status: "
              << (!run     ? run.error()
                  : run_id ? "no run " + std::to_string(*run_id) + " recorded in " +
                                 db_path.string() + " (start one with kopt run)"
                           : "no daemon run recorded in " + db_path.string() +
                                 " (start one with kopt run)")
              << "\n";
    code = run ? 1 : 2;
    return std::nullopt;
  }
  return std::pair{progress_from_record(**run),
                   (*run)->finished_at.empty() ? (*run)->started_at : (*run)->finished_at};
}

void print_status_json(memory::MemoryStore& store, const orchestrator::RunProgress& progress,
                       const std::string& updated_at, bool alive) {
  nlohmann::json out = progress.to_json();
  out["updated_at"] = updated_at;
  out["daemon_running"] = alive;
  for (size_t i = 0; i < progress.tasks.size() && i < out["tasks"].size(); ++i) {
    const auto& t = progress.tasks[i];
    if (!(t.best_us > 0)) continue;
    out["tasks"][i]["standing"] = standing_json(task_standing(store.database(), progress.gpu, t));
  }
  std::cout << dump_json_ascii(out, 2) << "\n";
}

void print_status_text(memory::MemoryStore& store, const orchestrator::RunProgress& progress,
                       const std::string& updated_at, bool alive) {
  std::cout << "run " << progress.run_id << " (" << progress.mode << " mode"
            << (progress.gpu.empty() ? "" : ", " + terminal_text(progress.gpu)) << "), last update "
            << updated_at << (alive ? ", daemon pid " + std::to_string(progress.pid) : "") << "\n";
  for (const std::string& line : orchestrator::render_progress(progress)) {
    std::cout << line << "\n";
  }
  bool header = false;
  for (const auto& t : progress.tasks) {
    if (!(t.best_us > 0)) continue;
    if (!header) {
      std::printf("\n%-18s %9s  %-28s %6s  %s\n", "best vs", "baseline", "production", "%SOL", "S");
      header = true;
    }
    Standing s = task_standing(store.database(), progress.gpu, t);
    std::printf("%-18s %8.2fx  %-28s %6.1f  %s\n", std::string(utf8_prefix(t.name, 18)).c_str(),
                s.speedup_vs_baseline, format_production_speedup(s).c_str(), s.sol_percent,
                format_score(s).c_str());
  }
}

// The status once: the table (or --json) of the run in `db_path`; `alive` says whether its
// daemon still runs.
int show_status(const cxxopts::ParseResult& args, const std::filesystem::path& db_path,
                bool& alive) {
  auto store = open_memory_at(db_path, MemoryAccess::kRead, "kopt status");
  if (!store) {
    // A database that is not there is a wrong --db (2); one that is there but unreadable is not.
    int code = memory_open_exit_code();
    return code == memory::kExitUnreadableDatabase ? code : 2;
  }
  std::optional<int64_t> run_id;
  if (args.count("run")) run_id = args["run"].as<int64_t>();
  int code = 0;
  auto read = read_progress(*store, run_id, db_path, code);
  if (!read) return code;
  auto& [progress, updated_at] = *read;
  // The published state says "running" until the daemon writes its last status; a daemon that
  // was killed never does, so ask the lock who holds it.
  auto holder = orchestrator::DaemonLock::holder(db_path);
  alive = holder && (*holder == 0 || *holder == progress.pid);
  if ((progress.state == "running" || progress.state == "draining") && !alive) {
    progress.state = "stopped (the daemon is gone; kopt run --resume continues)";
  }
  if (auto pending = orchestrator::pending_submissions(store->database())) {
    progress.pending_submissions = *pending;
  }
  // The counts the report gives for the same run, from the database itself.
  if (auto counted = apply_database_counts(*store, progress); !counted) {
    std::cerr << "kopt status: " << counted.error() << "\n";
    return 2;
  }
  if (args.count("json")) {
    print_status_json(*store, progress, updated_at, alive);
  } else {
    print_status_text(*store, progress, updated_at, alive);
  }
  return 0;
}

// --watch: the status redrawn every `every` seconds (the screen cleared on a terminal; a
// separator line otherwise) until the daemon stops, or Ctrl-C.
int watch_status(const cxxopts::ParseResult& args, const std::filesystem::path& db_path,
                 double every) {
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  while (true) {
    if (terminal) std::cout << "\x1b[H\x1b[2J";
    bool alive = false;
    int code = show_status(args, db_path, alive);
    std::cout.flush();
    if (code != 0) return code;
    if (!alive) {
      if (!args.count("json")) std::cout << "(the daemon is not running: --watch stops)\n";
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(every * 1000)));
    if (!terminal) std::cout << "\n";
  }
}

}  // namespace

int run_status(int argc, char** argv) {
  cxxopts::Options options("kopt status", "show the state of the daemon's current or last run");
  add_database_option(options);
  options.add_options()("run", "a run id (default: the latest)", cxxopts::value<int64_t>())(
      "json", "print the status as JSON")("watch",
                                          "redraw the status until the daemon stops (or Ctrl-C)")(
      "every", "--watch: seconds between redraws", cxxopts::value<double>()->default_value("2"),
      "SECONDS");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  auto db = database_path(*args);
  if (!db) {
    std::cerr << "kopt status: " << db.error() << "\n";
    return 2;
  }
  // Checked once, not at every --watch redraw.
  if (!database_file_readable(*db, "kopt status")) return memory::kExitUnreadableDatabase;
  bool alive = false;
  if (!args->count("watch")) {
    if (args->count("every")) {
      std::cerr << "kopt status: --every goes with --watch\n";
      return 2;
    }
    return show_status(*args, *db, alive);
  }
  double every = (*args)["every"].as<double>();
  if (!(every >= 0.1 && every <= 3600)) {
    std::cerr << "kopt status: --every " << every << " is not a number of seconds in 0.1..3600\n";
    return 2;
  }
  return watch_status(*args, *db, every);
}

}  // namespace kopt::cli
