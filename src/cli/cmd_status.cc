// kopt status [--db PATH] [--run ID] [--json]: the state of the daemon's run, read from the
// database from any shell while the daemon works (or after it stopped).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "common/json_limits.h"
#include "common/sol_score.h"
#include "common/text_escape.h"
#include "common/utf8.h"
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

}  // namespace

int run_status(int argc, char** argv) {
  cxxopts::Options options("kopt status", "show the state of the daemon's current or last run");
  add_database_option(options);
  options.add_options()("run", "a run id (default: the latest)", cxxopts::value<int64_t>())(
      "json", "print the status as JSON");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  auto db = database_path(*args);
  if (!db) {
    std::cerr << "kopt status: " << db.error() << "\n";
    return 2;
  }
  const std::filesystem::path& db_path = *db;
  memory::OpenOptions open_options;
  open_options.create = false;
  open_options.read_only = true;
  auto store = memory::MemoryStore::open(db_path, open_options);
  if (!store) {
    std::cerr << "kopt status: " << store.error() << "\n";
    return 2;
  }
  std::optional<int64_t> run_id;
  if (args->count("run")) run_id = (*args)["run"].as<int64_t>();
  auto row = orchestrator::read_status(store->database(), run_id);
  if (!row) {
    std::cerr << "kopt status: " << row.error() << "\n";
    return 2;
  }
  orchestrator::RunProgress progress;
  std::string updated_at;
  if (*row) {
    auto parsed = nlohmann::json::parse((*row)->status_json, nullptr, false);
    progress = orchestrator::RunProgress::from_json(parsed.is_object() ? parsed
                                                                       : nlohmann::json::object());
    updated_at = (*row)->updated_at;
  } else {
    // A run with a record but no published status (it stopped before its first one).
    auto run = run_id ? store->run(*run_id) : store->latest_run();
    if (!run) {
      std::cerr << "kopt status: " << run.error() << "\n";
      return 2;
    }
    if (!*run) {
      std::cerr << "kopt status: "
                << (run_id ? "no run " + std::to_string(*run_id) + " recorded in "
                           : std::string("no daemon run recorded in "))
                << db_path.string() << " (start one with kopt run)\n";
      return 1;
    }
    progress = progress_from_record(**run);
    updated_at = (*run)->finished_at.empty() ? (*run)->started_at : (*run)->finished_at;
  }
  // The published state says "running" until the daemon writes its last status; a daemon that
  // was killed never does, so ask the lock who holds it.
  auto holder = orchestrator::DaemonLock::holder(db_path);
  bool alive = holder && (*holder == 0 || *holder == progress.pid);
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
  if (args->count("json")) {
    nlohmann::json out = progress.to_json();
    out["updated_at"] = updated_at;
    out["daemon_running"] = alive;
    for (size_t i = 0; i < progress.tasks.size() && i < out["tasks"].size(); ++i) {
      const auto& t = progress.tasks[i];
      if (!(t.best_us > 0)) continue;
      Standing s = task_standing(store->database(), progress.gpu, t);
      out["tasks"][i]["standing"] = standing_json(s);
    }
    std::cout << dump_json(out, 2) << "\n";
    return 0;
  }
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
    Standing s = task_standing(store->database(), progress.gpu, t);
    std::printf("%-18s %8.2fx  %-28s %6.1f  %s\n", std::string(utf8_prefix(t.name, 18)).c_str(),
                s.speedup_vs_baseline, format_production_speedup(s).c_str(), s.sol_percent,
                format_score(s).c_str());
  }
  return 0;
}

}  // namespace kopt::cli
