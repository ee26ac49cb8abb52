// kopt compare RUN_A RUN_B [--db PATH] [--db-b PATH] [--json]: two runs side by side, per task:
// its best (task_best.h's rule: speedup over the baseline, median), S against what users run,
// candidates and the verdict counts. RUN_B may live in another database (--db-b), e.g. a night
// on another GPU or an import of a colleague's export.
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_limits.h"
#include "common/sol_score.h"
#include "memory_store/database_check.h"
#include "memory_store/production_baselines.h"
#include "memory_store/task_counts.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"

namespace kopt::cli {
namespace {

using nlohmann::json;

struct RunSide {
  int64_t run_id = 0;
  std::map<std::string, memory::TaskCounts> counts;
  std::map<std::string, std::map<std::string, int64_t>> verdicts;  // task -> verdict -> count
  std::map<std::string, Standing> standing;                        // of each task's best
};

Result<RunSide> read_side(memory::MemoryStore& store, int64_t run_id) {
  auto run = store.run(run_id);
  if (!run) return make_error(run.error());
  if (!*run) {
    return make_error("no run " + std::to_string(run_id) + " in " +
                      store.database().path().string());
  }
  RunSide side;
  side.run_id = run_id;
  auto counts = memory::task_counts(store.database(), run_id);
  if (!counts) return make_error(counts.error());
  side.counts = std::move(*counts);
  auto verdicts = store.database().cached(
      "SELECT t.name, e.verdict, count(*) FROM evaluations e JOIN tasks t ON t.id = e.task_id"
      " WHERE e.run_id = ?1 GROUP BY t.name, e.verdict");
  verdicts->bind(1, run_id);
  while (true) {
    auto row = verdicts->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    side.verdicts[verdicts->column_text(0)][verdicts->column_text(1)] = verdicts->column_int64(2);
  }
  for (const auto& [task, c] : side.counts) {
    if (c.best) side.standing[task] = memory::evaluation_standing(store.database(), *c.best);
  }
  return side;
}

std::string verdict_text(const std::map<std::string, int64_t>& verdicts) {
  std::string out;
  for (const auto& [verdict, n] : verdicts) {
    out += (out.empty() ? "" : " ") + verdict + ":" + std::to_string(n);
  }
  return out.empty() ? "-" : out;
}

json side_json(const RunSide& side, const std::string& task) {
  auto c = side.counts.find(task);
  if (c == side.counts.end()) return nullptr;
  json j = {{"candidates", c->second.candidates},
            {"verified", c->second.verified},
            {"verdicts", side.verdicts.count(task) ? json(side.verdicts.at(task)) : json::object()},
            {"best_speedup", nullptr},
            {"best_us", nullptr},
            {"standing", nullptr}};
  if (c->second.best) {
    j["best_speedup"] = c->second.best->speedup;
    j["best_us"] = c->second.best->median_us;
    j["best_kernel"] = c->second.best->kernel_id;
    j["gpu"] = c->second.best->gpu.model;
    j["standing"] = standing_json(side.standing.at(task));
  }
  return j;
}

std::string best_cell(const RunSide& side, const std::string& task) {
  auto c = side.counts.find(task);
  if (c == side.counts.end()) return "(not in run)";
  if (!c->second.best) return "none verified";
  char text[64];
  std::snprintf(text, sizeof text, "%.2fx %.1fus", c->second.best->speedup,
                c->second.best->median_us);
  return text;
}

std::string score_cell(const RunSide& side, const std::string& task) {
  auto s = side.standing.find(task);
  if (s == side.standing.end() || !s->second.score) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", *s->second.score);
  return text;
}

void print_table(const RunSide& a, const RunSide& b, const std::set<std::string>& tasks) {
  std::printf("%-20s %-18s %-18s %6s %6s  %s\n", "task",
              ("best, run " + std::to_string(a.run_id)).c_str(),
              ("best, run " + std::to_string(b.run_id)).c_str(), "S a", "S b", "verdicts a | b");
  for (const std::string& task : tasks) {
    std::string va = a.verdicts.count(task) ? verdict_text(a.verdicts.at(task)) : "-";
    std::string vb = b.verdicts.count(task) ? verdict_text(b.verdicts.at(task)) : "-";
    std::printf("%-20s %-18s %-18s %6s %6s  %s | %s\n", task.substr(0, 20).c_str(),
                best_cell(a, task).c_str(), best_cell(b, task).c_str(), score_cell(a, task).c_str(),
                score_cell(b, task).c_str(), va.c_str(), vb.c_str());
  }
}

std::optional<int64_t> run_number(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(text);
}

}  // namespace

int run_compare(int argc, char** argv) {
  cxxopts::Options options("kopt compare",
                           "two runs side by side, per task: best, S and verdict counts\n"
                           "  kopt compare RUN_A RUN_B [--db PATH] [--db-b PATH] [--json]");
  add_database_option(options);
  options.add_options()("runs", "the two run ids", cxxopts::value<std::vector<std::string>>())(
      "db-b", "the database of RUN_B (default: --db's)", cxxopts::value<std::string>(), "PATH")(
      "json", "one JSON document");
  add_positionals(options, {"runs"}, "RUN_A RUN_B");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  std::vector<std::string> runs;
  if (args->count("runs")) runs = (*args)["runs"].as<std::vector<std::string>>();
  auto first = runs.size() == 2 ? run_number(runs[0]) : std::nullopt;
  auto second = runs.size() == 2 ? run_number(runs[1]) : std::nullopt;
  if (!first || !second) {
    std::cerr << "kopt compare: give two run ids (kopt compare RUN_A RUN_B; kopt status --run ID "
                 "shows one)\n";
    return 2;
  }
  auto store_a = open_memory(*args, MemoryAccess::kRead, "kopt compare");
  if (!store_a) return memory_open_exit_code();
  std::optional<memory::MemoryStore> store_b;
  if (args->count("db-b")) {
    std::filesystem::path other = (*args)["db-b"].as<std::string>();
    if (!database_file_readable(other, "kopt compare")) return memory::kExitUnreadableDatabase;
    store_b = open_memory_at(other, MemoryAccess::kRead, "kopt compare");
    if (!store_b) return memory::kExitUnreadableDatabase;
  }
  auto a = read_side(*store_a, *first);
  auto b = read_side(store_b ? *store_b : *store_a, *second);
  if (!a || !b) {
    std::cerr << "kopt compare: " << (!a ? a.error() : b.error()) << "\n";
    return 1;
  }
  std::set<std::string> tasks;
  for (const auto& side : {&*a, &*b}) {
    for (const auto& [task, c] : side->counts) tasks.insert(task);
  }
  if (args->count("json")) {
    json out = {{"run_a", *first}, {"run_b", *second}, {"tasks", json::array()}};
    for (const std::string& task : tasks) {
      out["tasks"].push_back(
          {{"task", task}, {"a", side_json(*a, task)}, {"b", side_json(*b, task)}});
    }
    std::cout << dump_json_ascii(out, 2) << "\n";
    return 0;
  }
  print_table(*a, *b, tasks);
  return 0;
}

}  // namespace kopt::cli
