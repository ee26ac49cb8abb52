// kopt report [--run ID|latest|all] [--db PATH] [--html FILE] [--markdown FILE]
#include <cstdlib>
#include <iostream>

#include "common/files.h"
#include "memory_store/memory_store.h"
#include "sandbox/judging_spec.h"
#include "src/cli/command.h"
#include "src/cli/memory_options.h"
#include "src/cli/options.h"
#include "src/report/html_report.h"
#include "src/report/markdown_report.h"
#include "src/report/report_data.h"

namespace kopt::cli {

namespace {

// The run a report covers: a number, "latest" (the default; every run when there is none) or
// "all". Writes the reason to stderr and returns false when `text` names no run.
bool resolve_run(memory::MemoryStore& store, const std::string& text,
                 std::optional<int64_t>& run_id) {
  if (text == "all") return true;
  if (text == "latest") {
    auto latest = store.latest_run();
    if (!latest) {
      std::cerr << "kopt report: " << latest.error() << "\n";
      return false;
    }
    if (*latest) run_id = (*latest)->id;
    return true;
  }
  char* end = nullptr;
  long long id = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || id <= 0) {
    std::cerr << "kopt report: --run expects a run id, 'latest' or 'all', not '" << text << "'\n";
    return false;
  }
  run_id = id;
  return true;
}

}  // namespace

int run_report(int argc, char** argv) {
  cxxopts::Options options(
      "kopt report",
      "write the morning report: best speedup over time, %SOL, verdicts, LLM tokens and cost, "
      "and the wins with their diffs, as one self-contained HTML file and/or markdown");
  options.add_options()("run", "run id, 'latest' or 'all'",
                        cxxopts::value<std::string>()->default_value("latest"))(
      "html", "write the HTML report to FILE", cxxopts::value<std::string>())(
      "markdown", "write the markdown summary to FILE ('-': standard output)",
      cxxopts::value<std::string>())("wins", "how many wins to show with their diffs",
                                     cxxopts::value<std::string>()->default_value("50"));
  add_database_option(options);
  int code = 0;
  auto args = parse_options(options, argc, argv, code);
  if (!args) return code;
  if (!args->count("html") && !args->count("markdown")) {
    std::cerr << "kopt report: give --html FILE and/or --markdown FILE (see --help)\n";
    return 2;
  }
  auto db = database_path(*args);
  auto store = open_memory(*args, MemoryAccess::kRead, "kopt report");
  if (!db) return 1;
  if (!store) return memory_open_exit_code();
  // Parsed here, not by cxxopts: its integer parser trips GCC 12's -Werror=restrict.
  report::ReportScope scope;
  scope.verifier_version = kVerifierVersion;
  std::string wins = (*args)["wins"].as<std::string>();
  char* wins_end = nullptr;
  long wins_value = std::strtol(wins.c_str(), &wins_end, 10);
  if (wins.empty() || *wins_end != '\0' || wins_value < 0 || wins_value > 100000) {
    std::cerr << "kopt report: --wins expects a count, not '" << wins << "'\n";
    return 2;
  }
  scope.max_wins = int(wins_value);
  if (!resolve_run(*store, (*args)["run"].as<std::string>(), scope.run_id)) return 2;
  auto data = report::load_report_data(*store, db->string(), scope);
  if (!data) {
    std::cerr << "kopt report: " << data.error() << "\n";
    return 1;
  }
  if (args->count("html")) {
    std::filesystem::path file = (*args)["html"].as<std::string>();
    if (auto written = write_file_atomic(file, report::render_html(*data)); !written) {
      std::cerr << "kopt report: " << written.error() << "\n";
      return 1;
    }
    std::cerr << "kopt report: wrote " << file.string() << " (" << data->tasks.size() << " tasks, "
              << data->evaluations << " candidates, " << data->wins.size() << " wins)\n";
  }
  if (args->count("markdown")) {
    std::string text = report::render_markdown(*data);
    std::string target = (*args)["markdown"].as<std::string>();
    if (target == "-") {
      std::cout << text;
    } else if (auto written = write_file_atomic(target, text); !written) {
      std::cerr << "kopt report: " << written.error() << "\n";
      return 1;
    } else {
      std::cerr << "kopt report: wrote " << target << "\n";
    }
  }
  return 0;
}

}  // namespace kopt::cli
