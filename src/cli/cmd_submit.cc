// kopt submit TASKDIR [--db PATH]: hands a task to the running daemon through the database. The
// task is checked here first (it parses, its kernels parse), so a typo fails in the submitter's
// shell rather than in the daemon's log.
#include <iostream>

#include "memory_store/database_check.h"
#include "memory_store/memory_store.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/orchestrator/daemon_lock.h"
#include "src/orchestrator/daemon_tables.h"

namespace kopt::cli {

int run_submit(int argc, char** argv) {
  cxxopts::Options options("kopt submit",
                           "add a task to the running daemon (or to the next "
                           "kopt run --resume)");
  options.add_options()("task", "task folder or name", cxxopts::value<std::string>());
  add_database_option(options);
  add_positionals(options, {"task"}, "TASKDIR");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  if (!given(options, *args, "task", "TASKDIR")) return 2;
  auto dir = resolve_task_dir((*args)["task"].as<std::string>(), default_tasks_root());
  if (!dir) {
    std::cerr << "kopt submit: " << dir.error() << "\n";
    return 2;
  }
  auto task = load_task(*dir);
  if (!task) {
    std::cerr << task.error() << "\n";
    return 2;
  }
  for (const char* name : {"reference.cu", "baseline.cu"}) {
    auto file = load_kernel_file(*dir / name, &*task);
    if (!file) {
      std::cerr << file.error() << "\n";
      return 2;
    }
  }
  auto db = database_path(*args);
  if (!db) {
    std::cerr << "kopt submit: " << db.error() << "\n";
    return 2;
  }
  const std::filesystem::path& db_path = *db;
  if (!database_file_readable(db_path, "kopt submit")) return memory::kExitUnreadableDatabase;
  auto store = memory::MemoryStore::open(db_path);
  if (!store) {
    std::cerr << "kopt submit: " << store.error() << "\n";
    return memory::kExitUnreadableDatabase;
  }
  auto id = orchestrator::submit_task(store->database(), dir->string());
  if (!id) {
    std::cerr << "kopt submit: " << id.error() << "\n";
    return 1;
  }
  auto holder = orchestrator::DaemonLock::holder(db_path);
  if (holder) {
    std::cout << "submitted " << task->name << " (" << dir->string() << ") to the daemon"
              << (*holder > 0 ? " (pid " + std::to_string(*holder) + ")" : std::string())
              << "; it starts within seconds\n";
  } else {
    std::cout << "queued " << task->name << " (" << dir->string() << "); no daemon is running on "
              << db_path.string() << ", the next kopt run takes it\n";
  }
  return 0;
}

}  // namespace kopt::cli
