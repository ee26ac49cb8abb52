// kopt memory wins|search|show|stats|export|import|prune: ask the memory what won, look inside
// it, share it, keep it small. Read commands never create a database.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/sol_score.h"
#include "common/strings.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "exchange/jsonl_io.h"
#include "memory_store/database_check.h"
#include "memory_store/judging_staleness.h"
#include "memory_store/line_diff.h"
#include "memory_store/production_baselines.h"
#include "sandbox/judging_spec.h"
#include "sandbox/profile_bottleneck.h"
#include "src/cli/command.h"
#include "src/cli/memory_calls.h"
#include "src/cli/memory_cards.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"

namespace kopt::cli {
namespace {

using memory::MemoryStore;
using memory::PairRecord;
using nlohmann::json;

constexpr const char* kUsage =
    "the memory of slow-to-fast kernel pairs\n"
    "  kopt memory wins [--task T] [--gpu G] [--min-speedup X] [--since DATE] "
    "[--vs baseline|production] [--json]\n"
    "  kopt memory search \"QUERY\" [--task T] [--json]\n"
    "  kopt memory show ID [--json]\n"
    "  kopt memory kernel ID [--out FILE] [--json]   (one stored kernel's source)\n"
    "  kopt memory calls [--task T] [--limit N] [--json]   (the prompts and answers the daemon "
    "kept)\n"
    "  kopt memory call ID [--json]\n"
    "  kopt memory stats [--task T] [--json]\n"
    "  kopt memory cards [--task T] [--json]   (what memory knows per technique)\n"
    "  kopt memory export --jsonl FILE [--task T]\n"
    "  kopt memory import --jsonl FILE\n"
    "  kopt memory upgrade   (migrates an older memory to this kopt's schema)\n"
    "  kopt memory prune [--dry-run] [--max-per-task N] [--max-per-family N] "
    "[--max-negatives-per-task N]";

// A table cell: one line, every control character, C1 control and bidi override shown as a
// visible escape (model and imported text: OSC 52 would write the clipboard), cut on a character.
std::string shorten(const std::string& text, size_t width) {
  std::string flat = text;
  for (char& c : flat) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  flat = terminal_text(flat);
  return flat.size() <= width ? flat : clip_utf8(flat, width - 3);
}

json pair_json(const PairRecord& p) {
  return {{"id", p.id},
          {"task", p.task},
          {"speedup", p.speedup},
          {"gpu_model", p.gpu_model},
          {"gpu_arch", p.gpu_arch},
          {"summary", p.summary},
          {"tags", p.tags},
          {"negative", p.is_negative},
          {"slow_kernel", p.slow_kernel_id},
          {"fast_kernel", p.fast_kernel_id},
          {"lineage", p.lineage_root_id},
          {"retrieved", p.retrieved_count},
          {"improved", p.improved_count},
          {"created_at", p.created_at}};
}

// Why the verdict a win stands on may not hold under its task's current spec and this kopt's
// verifier ("" when it does).
std::string stale_win(MemoryStore& store, const PairRecord& p) {
  auto evaluation = store.verifying_evaluation(p.fast_kernel_id, p.gpu_model);
  if (!evaluation || !*evaluation) return "";
  auto task = store.find_task(p.task);
  std::string current = task && *task ? (*task)->judging_spec_sha256 : "";
  return memory::stale_judgment(**evaluation, current, kVerifierVersion);
}

// An unknown --task is an error that names it, not an empty table.
bool check_task(MemoryStore& store, const std::string& task, const char* command) {
  if (task.empty()) return true;
  auto found = store.find_task(task);
  if (found && *found) return true;
  std::vector<std::string> names;
  if (auto all = store.list_tasks()) {
    for (const auto& t : *all) names.push_back(t.name);
  }
  std::cerr << command << ": "
            << (found
                    ? "unknown task '" + task + "' (not in the memory)" + did_you_mean(task, names)
                    : found.error())
            << "\n";
  return false;
}

// Where a win's fast kernel stands (common/sol_score.h), from the evaluation that verified it.
std::optional<Standing> win_standing(MemoryStore& store, const PairRecord& p) {
  auto evaluation = store.verifying_evaluation(p.fast_kernel_id, p.gpu_model);
  if (!evaluation || !*evaluation) return std::nullopt;
  return memory::evaluation_standing(store.database(), **evaluation);
}

// `--vs production`: each win's fast kernel against the best production baseline measured for
// its task on its GPU (kopt baselines), with its speedup over baseline.cu, %SOL and S.
void print_wins_vs_production(MemoryStore& store, const std::vector<PairRecord>& pairs) {
  std::printf("%6s  %-18s %9s  %-26s %6s  %-32s %s\n", "pair", "task", "vs base", "vs production",
              "%SOL", "S", "gpu");
  bool none_measured = false;
  for (const auto& p : pairs) {
    auto s = win_standing(store, p);
    if (!s) continue;
    none_measured |= s->production_name.empty();
    std::printf("%6lld  %-18s %8.2fx  %-26s %6.1f  %-32s %s\n", static_cast<long long>(p.id),
                shorten(p.task, 18).c_str(), s->speedup_vs_baseline,
                shorten(format_production_speedup(*s), 26).c_str(), s->sol_percent,
                shorten(format_score(*s), 32).c_str(), shorten(p.gpu_model, 24).c_str());
  }
  if (none_measured) {
    std::printf(
        "(none measured: no production baseline for that task on that GPU; kopt baselines "
        "TASK measures them, and S is then scored against baseline.cu)\n");
  }
}

// A pair's speedup is fast over slow; a task's best is over its baseline (task_best.h), the
// number `kopt status`, the report and the export give: said under the table, per task and GPU.
void print_task_bests(MemoryStore& store, const std::vector<PairRecord>& pairs) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& p : pairs) {
    if (!seen.insert({p.task, p.gpu_model}).second) continue;
    auto best = store.best_kernel(p.task, p.gpu_model);
    if (!best || !*best) continue;
    std::printf("best of %s on %s: %.2fx its baseline (kernel %lld; kopt memory kernel %lld)\n",
                p.task.c_str(), p.gpu_model.c_str(), (*best)->speedup,
                static_cast<long long>((*best)->kernel_id),
                static_cast<long long>((*best)->kernel_id));
  }
}

int wins(MemoryStore& store, const cxxopts::ParseResult& args) {
  std::string vs = args["vs"].as<std::string>();
  if (vs != "baseline" && vs != "production") {
    std::cerr << "kopt memory wins: --vs '" << vs << "' is not baseline or production"
              << did_you_mean(vs, {"baseline", "production"}) << "\n";
    return 2;
  }
  memory::WinsFilter filter;
  if (args.count("task")) filter.task = args["task"].as<std::string>();
  if (args.count("gpu")) filter.gpu = args["gpu"].as<std::string>();
  filter.min_speedup = args["min-speedup"].as<double>();
  filter.limit = args["limit"].as<int64_t>();
  if (args.count("since")) {
    filter.since = args["since"].as<std::string>();
    static const std::regex kDate(R"(\d{4}-\d{2}-\d{2}(T[0-9:]*Z?)?)");
    if (!std::regex_match(filter.since, kDate)) {
      std::cerr << "kopt memory wins: --since '" << filter.since
                << "' is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)\n";
      return 2;
    }
  }
  auto pairs = store.wins(filter);
  if (!pairs) {
    std::cerr << "kopt memory wins: " << pairs.error() << "\n";
    return 1;
  }
  if (args.count("json")) {
    json out = json::array();
    for (const auto& p : *pairs) {
      json row = pair_json(p);
      std::string stale = stale_win(store, p);
      row["stale_judgment"] = stale.empty() ? json() : json(stale);
      auto standing = win_standing(store, p);
      row["standing"] = standing ? standing_json(*standing) : json();
      out.push_back(row);
    }
    std::cout << dump_json_ascii(out, 2) << "\n";
    return 0;
  }
  if (pairs->empty()) {
    std::cout << "no wins match\n";
    return 0;
  }
  if (vs == "production") {
    print_wins_vs_production(store, *pairs);
    return 0;
  }
  std::vector<std::string> notes;
  std::printf("%6s  %-18s %8s  %-24s %-7s %5s %5s  %s\n", "pair", "task", "pair x", "gpu", "arch",
              "shown", "help", "why it is faster");
  for (const auto& p : *pairs) {
    std::string stale = stale_win(store, p);
    if (!stale.empty()) notes.push_back("pair " + std::to_string(p.id) + ": " + stale);
    std::printf("%6lld  %-18s %7.2fx%s %-24s %-7s %5lld %5lld  %s\n", static_cast<long long>(p.id),
                shorten(p.task, 18).c_str(), p.speedup, stale.empty() ? " " : "*",
                shorten(p.gpu_model, 24).c_str(), shorten(p.gpu_arch, 7).c_str(),
                static_cast<long long>(p.retrieved_count), static_cast<long long>(p.improved_count),
                shorten(p.summary, 60).c_str());
  }
  for (const auto& note : notes) std::printf("* %s\n", terminal_text(note).c_str());
  if (!notes.empty()) std::printf("  (%s)\n", memory::kRejudgeAdvice);
  print_task_bests(store, *pairs);
  return 0;
}

int search(MemoryStore& store, const cxxopts::ParseResult& args,
           const std::vector<std::string>& words) {
  if (words.empty()) {
    std::cerr << "kopt memory search: missing QUERY (see --help)\n";
    return 2;
  }
  int64_t limit = args["limit"].as<int64_t>();
  std::string task = args.count("task") ? args["task"].as<std::string>() : "";
  // With --task, every hit is ranked and the task's best `limit` kept.
  auto hits = store.search(join(words, " "), task.empty() ? limit : int64_t{1} << 40);
  if (!hits) {
    std::cerr << "kopt memory search: " << hits.error() << "\n";
    return 1;
  }
  if (!task.empty()) {
    std::erase_if(*hits, [&](const memory::SearchHit& h) { return h.task != task; });
    if (static_cast<int64_t>(hits->size()) > limit) hits->resize(static_cast<size_t>(limit));
  }
  if (args.count("json")) {
    json out = json::array();
    for (const auto& h : *hits) {
      out.push_back({{"kind", h.kind},
                     {"id", h.id},
                     {"task", h.task},
                     {"text", h.text},
                     {"speedup", h.speedup}});
    }
    std::cout << dump_json_ascii(out, 2) << "\n";
    return 0;
  }
  if (hits->empty()) std::cout << "nothing matches\n";
  for (const auto& h : *hits) {
    if (h.kind == "pair") {
      std::printf("pair   %6lld  %-18s %6.2fx  %s\n", static_cast<long long>(h.id),
                  shorten(h.task, 18).c_str(), h.speedup, shorten(h.text, 70).c_str());
    } else {
      std::printf("kernel %6lld  %-18s          %s\n", static_cast<long long>(h.id),
                  shorten(h.task, 18).c_str(), terminal_text(h.text).c_str());
    }
  }
  return 0;
}

// Where each side's time went, from the newest profile pass of each kernel (if any).
void print_profiles(MemoryStore& store, const PairRecord& p) {
  bool any = false;
  for (auto [side, id] :
       {std::pair{"slow", p.slow_kernel_id}, std::pair{"fast", p.fast_kernel_id}}) {
    auto text = store.latest_profile(id);
    if (!text) continue;
    auto profile = stored_kernel_profile(*text);
    if (!profile) continue;
    std::printf("%s side: %.2f us under the profiler; %s\n", side, profile->duration_us,
                terminal_text(describe_profile_and_bottleneck(*profile)).c_str());
    any = true;
  }
  if (any) std::printf("\n");
}

// The ID argument of show and kernel: one number.
std::optional<int64_t> one_id(const std::vector<std::string>& words, const std::string& command,
                              const char* what) {
  if (words.size() != 1 || words[0].empty() || words[0].size() > 18 ||
      words[0].find_first_not_of("0123456789") != std::string::npos) {
    std::cerr << command << ": expected one " << what << " ID (a number; see kopt memory wins)\n";
    return std::nullopt;
  }
  return std::stoll(words[0]);
}

// What `show` prints (as text or JSON): the pair and both of its kernels.
struct ShownPair {
  PairRecord pair;
  memory::KernelRecord slow, fast;
};

// The pair `words` names, or nullopt with the error printed and `code` set.
std::optional<ShownPair> load_shown_pair(MemoryStore& store, const std::vector<std::string>& words,
                                         int& code) {
  code = 2;
  auto id = one_id(words, "kopt memory show", "pair");
  if (!id) return std::nullopt;
  code = 1;
  auto pair = store.pair(*id);
  if (!pair || !*pair) {
    std::cerr << "kopt memory show: "
              << (pair
                      ? "no pair " + std::to_string(*id) + " in " + store.database().path().string()
                      : pair.error())
              << "\n";
    return std::nullopt;
  }
  auto slow = store.kernel((*pair)->slow_kernel_id);
  auto fast = store.kernel((*pair)->fast_kernel_id);
  if (!slow || !fast || !*slow || !*fast) {
    std::cerr << "kopt memory show: the kernels of pair " << *id << " are missing\n";
    return std::nullopt;
  }
  return ShownPair{**pair, **slow, **fast};
}

// The change a pair records, slow kernel to fast, as a unified diff ("" when identical).
std::string shown_diff(const ShownPair& shown) {
  const PairRecord& p = shown.pair;
  return memory::unified_diff(shown.slow.source, shown.fast.source,
                              "kernel " + std::to_string(p.slow_kernel_id) + " (slow)",
                              "kernel " + std::to_string(p.fast_kernel_id) + " (fast)");
}

int show(MemoryStore& store, const std::vector<std::string>& words) {
  int code = 0;
  auto shown = load_shown_pair(store, words, code);
  if (!shown) return code;
  const PairRecord& p = shown->pair;
  std::printf("pair %lld: %s, %.3fx %s on %s (%s)\n", static_cast<long long>(p.id),
              terminal_text(p.task).c_str(), p.speedup,
              p.is_negative ? "(slower: a warning)" : "faster", terminal_text(p.gpu_model).c_str(),
              p.gpu_arch.empty() ? "arch unknown" : terminal_text(p.gpu_arch).c_str());
  std::printf("tags: %s\n", terminal_text(join(p.tags, ", ")).c_str());
  std::printf("shown in prompts %lld times, helped %lld times; lineage %lld; recorded %s\n",
              static_cast<long long>(p.retrieved_count), static_cast<long long>(p.improved_count),
              static_cast<long long>(p.lineage_root_id), terminal_text(p.created_at).c_str());
  std::printf("slow kernel %lld (%s), fast kernel %lld (%s)\n\n",
              static_cast<long long>(p.slow_kernel_id), shown->slow.sha256.substr(0, 12).c_str(),
              static_cast<long long>(p.fast_kernel_id), shown->fast.sha256.substr(0, 12).c_str());
  std::printf("%s\n\n", p.summary.empty() ? "(no summary)" : terminal_text(p.summary).c_str());
  print_profiles(store, p);
  std::string diff = shown_diff(*shown);
  std::cout << (diff.empty() ? "(the sources are identical)\n" : terminal_block_text(diff));
  return 0;
}

// `kopt memory show ID --json`: the pair, both kernels' sources and the diff, for scripts.
int show_json(MemoryStore& store, const std::vector<std::string>& words) {
  int code = 0;
  auto shown = load_shown_pair(store, words, code);
  if (!shown) return code;
  json out = pair_json(shown->pair);
  out["slow_source"] = shown->slow.source;
  out["fast_source"] = shown->fast.source;
  out["diff"] = shown_diff(*shown);
  std::cout << dump_json_ascii(out, 2) << "\n";
  return 0;
}

// `kopt memory kernel ID [--out FILE] [--json]`: one stored kernel's source (a .cu file that
// `kopt eval TASK FILE` takes), to stdout or a new file (an existing one is never overwritten).
int show_kernel(MemoryStore& store, const std::vector<std::string>& words,
                const cxxopts::ParseResult& args) {
  auto id = one_id(words, "kopt memory kernel", "kernel");
  if (!id) return 2;
  auto kernel = store.kernel(*id);
  if (!kernel || !*kernel) {
    std::cerr << "kopt memory kernel: "
              << (kernel ? "no kernel " + std::to_string(*id) + " in " +
                               store.database().path().string() +
                               " (kopt memory wins lists "
                               "the fast and slow kernels of each pair)"
                         : kernel.error())
              << "\n";
    return 1;
  }
  const memory::KernelRecord& k = **kernel;
  if (args.count("json")) {
    std::cout << dump_json_ascii(json{{"id", k.id},
                                      {"task", k.task},
                                      {"sha256", k.sha256},
                                      {"parent", k.parent_id ? json(*k.parent_id) : json()},
                                      {"run", k.run_id ? json(*k.run_id) : json()},
                                      {"origin_agent", origin_name(k.origin.agent)},
                                      {"origin_model", k.origin.model},
                                      {"created_at", k.created_at},
                                      {"source", k.source}},
                                 2)
              << "\n";
    return 0;
  }
  if (!args.count("out")) {
    std::cout << k.source;
    return 0;
  }
  std::filesystem::path file = args["out"].as<std::string>();
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::cerr << "kopt memory kernel: " << file.string()
              << " exists; give a new file name (nothing was written)\n";
    return 1;
  }
  if (auto written = write_file_atomic(file, k.source); !written) {
    std::cerr << "kopt memory kernel: " << written.error() << "\n";
    return 1;
  }
  std::printf("wrote kernel %lld of task %s to %s (kopt eval %s %s judges it again)\n",
              static_cast<long long>(k.id), k.task.c_str(), file.c_str(), k.task.c_str(),
              file.c_str());
  return 0;
}

void print_counts(const char* title, const std::vector<std::pair<std::string, int64_t>>& counts) {
  std::printf("%s:\n", title);
  if (counts.empty()) std::printf("  (none)\n");
  for (const auto& [name, count] : counts) {
    std::printf("  %-32s %lld\n", terminal_text(name).c_str(), static_cast<long long>(count));
  }
}

int stats(MemoryStore& store, const cxxopts::ParseResult& args) {
  std::string task = args.count("task") ? args["task"].as<std::string>() : "";
  auto s = store.stats(task);
  if (!s) {
    std::cerr << "kopt memory stats: " << s.error() << "\n";
    return 1;
  }
  if (args.count("json")) {
    auto pairs_to_json = [](const auto& counts) {
      json out = json::object();
      for (const auto& [name, count] : counts) out[name] = count;
      return out;
    };
    std::cout << dump_json(
                     json{{"database", store.database().path().string()},
                          {"schema_version", s->schema_version},
                          {"file_bytes", s->file_bytes},
                          {"tasks", s->tasks},
                          {"kernels", s->kernels},
                          {"evaluations", s->evaluations},
                          {"pairs", s->pairs},
                          {"negative_pairs", s->negative_pairs},
                          {"runs", s->runs},
                          {"task", task.empty() ? json() : json(task)},
                          // Calls are accounted per run: not counted for one task.
                          {"llm_calls", s->llm_calls < 0 ? json() : json(s->llm_calls)},
                          {"evaluations_by_task", pairs_to_json(s->evaluations_by_task)},
                          {"pairs_by_task", pairs_to_json(s->pairs_by_task)},
                          {"evaluations_by_verdict", pairs_to_json(s->evaluations_by_verdict)},
                          {"evaluations_by_gpu", pairs_to_json(s->evaluations_by_gpu)}},
                     2)
              << "\n";
    return 0;
  }
  std::printf("database %s (schema version %d), %.1f MiB\n", store.database().path().c_str(),
              s->schema_version, static_cast<double>(s->file_bytes) / (1024.0 * 1024.0));
  std::printf(
      "%s%lld tasks, %lld kernels, %lld evaluations, %lld pairs (%lld negative), %lld runs, %s\n",
      task.empty() ? "" : ("task " + task + ": ").c_str(), static_cast<long long>(s->tasks),
      static_cast<long long>(s->kernels), static_cast<long long>(s->evaluations),
      static_cast<long long>(s->pairs), static_cast<long long>(s->negative_pairs),
      static_cast<long long>(s->runs),
      s->llm_calls < 0 ? "LLM calls not counted per task"
                       : (std::to_string(s->llm_calls) + " LLM calls").c_str());
  print_counts("evaluations by task", s->evaluations_by_task);
  print_counts("pairs by task", s->pairs_by_task);
  print_counts("evaluations by verdict", s->evaluations_by_verdict);
  print_counts("evaluations by GPU", s->evaluations_by_gpu);
  return 0;
}

// The lines of one task: the header, its task line, and its kernels, evaluations and pairs
// (a kernel's parent is always of the same task, so the lines import on their own).
std::string lines_of_task(const std::string& jsonl, const std::string& task,
                          memory::JsonlCounts& counts) {
  counts = {};
  std::string kept;
  for (const std::string& line : split(jsonl, '\n')) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    std::string type = j.is_object() ? j.value("type", "") : "";
    std::string of = type == "task" ? j.value("name", "") : j.value("task", "");
    if (type != "header" && of != task) continue;
    kept += line + "\n";
    if (type == "task") ++counts.tasks;
    if (type == "kernel") ++counts.kernels;
    if (type == "evaluation") ++counts.evaluations;
    if (type == "pair") ++counts.pairs;
  }
  return kept;
}

int export_memory(MemoryStore& store, const std::string& file, const std::string& task) {
  std::ostringstream out;
  auto counts = memory::export_jsonl(store, out);
  if (!counts) {
    std::cerr << "kopt memory export: " << counts.error() << "\n";
    return 1;
  }
  std::string text = task.empty() ? out.str() : lines_of_task(out.str(), task, *counts);
  if (file == "-") {
    std::cout << text;
  } else if (auto s = write_file_atomic(file, text); !s) {
    std::cerr << "kopt memory export: " << s.error() << "\n";
    return 1;
  }
  std::fprintf(file == "-" ? stderr : stdout,
               "exported %lld tasks, %lld kernels, %lld evaluations, %lld pairs%s%s\n",
               static_cast<long long>(counts->tasks), static_cast<long long>(counts->kernels),
               static_cast<long long>(counts->evaluations), static_cast<long long>(counts->pairs),
               file == "-" ? "" : " to ", file == "-" ? "" : file.c_str());
  return 0;
}

int import_memory(MemoryStore& store, const std::string& file) {
  auto text = read_file(file);
  if (!text) {
    std::cerr << "kopt memory import: " << text.error() << "\n";
    return 1;
  }
  auto report = memory::import_jsonl(store, *text, file);
  if (!report) {
    std::cerr << "kopt memory import: " << report.error() << "\nnothing was imported\n";
    return 1;
  }
  const auto& a = report->added;
  const auto& p = report->present;
  std::printf(
      "imported %s: added %lld tasks, %lld kernels, %lld evaluations, %lld pairs; "
      "already present %lld tasks, %lld kernels, %lld evaluations, %lld pairs\n",
      file.c_str(), static_cast<long long>(a.tasks), static_cast<long long>(a.kernels),
      static_cast<long long>(a.evaluations), static_cast<long long>(a.pairs),
      static_cast<long long>(p.tasks), static_cast<long long>(p.kernels),
      static_cast<long long>(p.evaluations), static_cast<long long>(p.pairs));
  return 0;
}

int prune(MemoryStore& store, const cxxopts::ParseResult& args) {
  memory::PruneCaps caps;
  caps.max_pairs_per_task = args["max-per-task"].as<int64_t>();
  caps.max_pairs_per_family = args["max-per-family"].as<int64_t>();
  caps.max_negatives_per_task = args["max-negatives-per-task"].as<int64_t>();
  caps.dry_run = args.count("dry-run") > 0;
  auto result = store.prune(caps);
  if (!result) {
    std::cerr << "kopt memory prune: " << result.error() << "\n";
    return 1;
  }
  for (size_t i = 0; i < result->removed.size(); ++i) {
    const PairRecord& p = result->removed[i];
    std::printf("%s pair %lld  %-18s %6.2fx  shown %lld helped %lld  (%s)\n",
                caps.dry_run ? "would drop" : "dropped", static_cast<long long>(p.id),
                shorten(p.task, 18).c_str(), p.speedup, static_cast<long long>(p.retrieved_count),
                static_cast<long long>(p.improved_count), result->reasons[i].c_str());
  }
  std::printf("%s %zu pairs\n", caps.dry_run ? "would drop" : "dropped", result->removed.size());
  return 0;
}

// `kopt memory upgrade`: migrates an older memory to this kopt's schema, explicitly (read
// commands never migrate).
int upgrade(const cxxopts::ParseResult& args) {
  auto path = database_path(args);
  if (!path) {
    std::cerr << "kopt memory upgrade: " << path.error() << "\n";
    return 2;
  }
  if (!database_file_readable(*path, "kopt memory upgrade", /*thorough=*/true)) {
    return memory::kExitUnreadableDatabase;
  }
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec)) {
    std::cerr << "kopt memory upgrade: " << path->string() << ": no memory database there\n";
    return 1;
  }
  int before = 0;
  {
    sql::Database::Options read;
    read.create = false;
    read.read_only = true;
    auto db = sql::Database::open(*path, read);
    auto version = db ? memory::schema_version(*db) : Result<int>(make_error(db.error()));
    if (!version) {
      std::cerr << "kopt memory upgrade: " << version.error() << "\n";
      return memory::kExitUnreadableDatabase;
    }
    before = *version;
  }
  auto store = open_memory(args, MemoryAccess::kWrite, "kopt memory upgrade");
  if (!store) return memory_open_exit_code();
  auto after = memory::schema_version(store->database());
  if (!after) {
    std::cerr << "kopt memory upgrade: " << after.error() << "\n";
    return 1;
  }
  if (*after == before) {
    std::printf("%s: schema version %d, already this kopt's; nothing to do\n", path->c_str(),
                before);
  } else {
    std::printf("%s: upgraded from schema version %d to %d\n", path->c_str(), before, *after);
  }
  return 0;
}

// The options each action honours (besides --db and --config); any other option given is
// refused by name rather than silently ignored.
const std::map<std::string, std::vector<std::string>> kHonoured = {
    {"wins", {"task", "gpu", "min-speedup", "since", "limit", "vs", "json"}},
    {"search", {"task", "limit", "json"}},
    {"show", {"json"}},
    {"calls", {"task", "limit", "json"}},
    {"call", {"json"}},
    {"stats", {"task", "json"}},
    {"cards", {"task", "json"}},
    {"export", {"jsonl", "task"}},
    {"import", {"jsonl"}},
    {"prune", {"dry-run", "max-per-task", "max-per-family", "max-negatives-per-task"}},
    {"kernel", {"out", "json"}},
    {"upgrade", {}},
};

bool refuse_unused_options(const std::string& action, const cxxopts::ParseResult& args) {
  const auto& honoured = kHonoured.at(action);
  for (const auto& given : args.arguments()) {
    const std::string& key = given.key();
    if (key == "action" || key == "words" || key == "db" || key == "config") continue;
    if (std::find(honoured.begin(), honoured.end(), key) != honoured.end()) continue;
    std::string hint = action == "export" && key == "json"
                           ? " (the export is JSON lines already: --jsonl FILE, - for stdout)"
                       : honoured.empty() ? std::string(" (it takes none)")
                                          : " (it takes: --" + join(honoured, ", --") + ")";
    std::cerr << "kopt memory " << action << ": --" << key << " is not an option of " << action
              << hint << "\n";
    return true;
  }
  return false;
}

}  // namespace

int run_memory(int argc, char** argv) {
  cxxopts::Options options("kopt memory", kUsage);
  options.add_options()("action",
                        "wins | search | show | kernel | calls | call | stats | cards | export | "
                        "import | prune | upgrade",
                        cxxopts::value<std::string>())(
      "words", "search words, or the pair (show) or kernel (kernel) ID",
      cxxopts::value<std::vector<std::string>>())(
      "out", "kernel: write the source to this new file", cxxopts::value<std::string>())(
      "task", "only this task", cxxopts::value<std::string>())(
      "gpu", "only this GPU (part of its model name, or an arch like sm_90)",
      cxxopts::value<std::string>())("min-speedup", "only pairs at least this fast",
                                     cxxopts::value<double>()->default_value("0"))(
      "since", "only pairs recorded on or after DATE (YYYY-MM-DD)", cxxopts::value<std::string>())(
      "limit", "at most this many rows", cxxopts::value<int64_t>()->default_value("50"))(
      "vs",
      "wins: compare with baseline (the pair's own speedup) or production (the best "
      "production baseline, %SOL and S)",
      cxxopts::value<std::string>()->default_value("baseline"))("json", "machine-readable output")(
      "jsonl", "the JSON-lines file to export to or import from", cxxopts::value<std::string>())(
      "dry-run", "prune: show what would be dropped, change nothing")(
      "max-per-task", "prune: positive pairs kept per task",
      cxxopts::value<int64_t>()->default_value("500"))(
      "max-per-family", "prune: positive pairs kept per operation family",
      cxxopts::value<int64_t>()->default_value("2000"))(
      "max-negatives-per-task", "prune: negative pairs kept per task",
      cxxopts::value<int64_t>()->default_value("100"));
  add_database_option(options);
  add_positionals(options, {"action", "words"},
                  "wins|search|show|kernel|calls|call|stats|export|import|prune [ARGS]");
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  if (!given(options, *args, "action", "action")) return 2;
  std::string action = (*args)["action"].as<std::string>();
  std::vector<std::string> words;
  if (args->count("words")) words = (*args)["words"].as<std::vector<std::string>>();
  const std::vector<std::string> actions = {"wins",   "search", "show",    "stats",
                                            "export", "import", "prune",   "calls",
                                            "call",   "kernel", "upgrade", "cards"};
  if (std::find(actions.begin(), actions.end(), action) == actions.end()) {
    std::cerr << "kopt memory: unknown action '" << action << "'" << did_you_mean(action, actions)
              << " (see --help)\n";
    return 2;
  }
  if (refuse_unused_options(action, *args)) return 2;
  if ((action == "export" || action == "import") && !args->count("jsonl")) {
    std::cerr << "kopt memory " << action << ": missing --jsonl FILE\n";
    return 2;
  }
  if (args->count("limit") && (*args)["limit"].as<int64_t>() <= 0) {
    std::cerr << "kopt memory " << action << ": --limit must be positive\n";
    return 2;
  }
  if (action == "upgrade") return upgrade(*args);
  // Only import may create the database: reading or pruning a memory that is not there is a
  // mistake in --db, and an empty new file would hide it.
  MemoryAccess access = action == "import"  ? MemoryAccess::kWriteOrCreate
                        : action == "prune" ? MemoryAccess::kWrite
                                            : MemoryAccess::kRead;
  auto store = open_memory(*args, access, "kopt memory " + action);
  if (!store) return memory_open_exit_code();
  std::string task = args->count("task") ? (*args)["task"].as<std::string>() : "";
  if (!check_task(*store, task, ("kopt memory " + action).c_str())) return 1;
  if (action == "wins") return wins(*store, *args);
  if (action == "search") return search(*store, *args, words);
  if (action == "show") return args->count("json") ? show_json(*store, words) : show(*store, words);
  if (action == "kernel") return show_kernel(*store, words, *args);
  if (action == "calls") return memory_calls(*store, *args);
  if (action == "call") return memory_call(*store, words, *args);
  if (action == "stats") return stats(*store, *args);
  if (action == "cards") return memory_cards(*store, *args);
  if (action == "export") return export_memory(*store, (*args)["jsonl"].as<std::string>(), task);
  if (action == "import") return import_memory(*store, (*args)["jsonl"].as<std::string>());
  return prune(*store, *args);
}

}  // namespace kopt::cli
