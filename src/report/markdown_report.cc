#include "src/report/markdown_report.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "memory_store/judging_staleness.h"
#include "src/report/markup.h"

namespace kopt::report {

namespace {

// A table cell: a line-start list marker ("31.2%") means nothing inside a cell, so a leading
// number keeps its point unescaped; everything else is escaped as model or imported text.
std::string markdown_cell(const std::string& cell) {
  size_t digits = cell.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string::npos || cell[digits] != '.') return markdown_text(cell);
  return cell.substr(0, digits + 1) + markdown_text(cell.substr(digits + 1));
}

// Each task's best kernel's hardware counters beside its baseline's, where they were profiled;
// nothing when no profile is stored.
std::string where_time_goes(const ReportData& data) {
  std::string rows;
  for (const auto& r : profile_rows(data)) {
    // The cells come from a stored profile, which may be imported: a stall reason can carry
    // markdown (a tracking-pixel image) or a '|' that breaks the table.
    std::vector<std::string> cells;
    for (const auto& cell : r.cells) cells.push_back(markdown_cell(cell));
    rows += "| " + markdown_text(r.task) + " | " + markdown_text(r.kernel) + " | " +
            join(cells, " | ") + " |\n";
  }
  if (rows.empty()) return "";
  return "\n### Where the time goes (hardware counters at the timed shape)\n\n| task | kernel | " +
         join(profile_headers(), " | ") +
         " |\n| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n" + rows;
}

// A fence longer than any backtick run in `text`, so a diff can never close its block early.
std::string fence_for(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

}  // namespace

std::string render_markdown(const ReportData& data) {
  std::string out = "## kopt report\n\n";
  // Model and imported text (GPU names, origins, lessons) is escaped; kopt's own words are not.
  out += "Scope: " + describe_scope(data) + ". GPU: " +
         (data.gpus.empty() ? std::string("none") : markdown_text(join(data.gpus, ", "))) + ".\n\n";
  int improved = 0;
  for (const auto& t : data.tasks) improved += t.best && t.best->speedup > 1.0;
  out += fmt::format(
      "- **{}** candidates judged on **{}** tasks, {} verified\n"
      "- **{} / {}** tasks faster than their baseline; geomean best speedup **{}**\n"
      "- **{}** wins (slow-to-fast pairs)\n"
      "- LLM: {} calls ({} failed), {} prompt + {} completion tokens, **${:.2f}**\n\n",
      data.evaluations, data.tasks.size(), data.verified, improved, data.tasks.size(),
      format_speedup(geomean_best_speedup(data)), data.wins.size(), data.llm_totals.calls,
      data.llm_totals.failed_calls, data.llm_totals.input_tokens, data.llm_totals.output_tokens,
      data.llm_totals.cost_usd);
  if (auto per_s = tokens_per_sol_score_gained(data)) {
    out += fmt::format("- LLM tokens per unit of S gained: **{:.0f}**\n\n", *per_s);
  }

  out +=
      "### Tasks\n\n| task | candidates | verified | baseline | best | speedup | vs production | "
      "%SOL baseline -> best | S | best from | failures |\n| --- | ---: | ---: | ---: | ---: | "
      "---: "
      "| ---: | ---: | --- | --- | --- |\n";
  for (const auto& t : data.tasks) {
    std::vector<std::string> failures;
    for (const auto& [verdict, count] : t.verdicts) {
      if (verdict != Verdict::kOk && verdict != Verdict::kScreened)
        failures.push_back(markdown_text(verdict_name(verdict)) + " " + std::to_string(count));
    }
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", markdown_text(t.task),
        t.candidates, t.verified, format_micros(t.baseline_us),
        format_micros(t.best ? t.best->median_us : 0), format_speedup(t.best ? t.best->speedup : 0),
        t.best ? markdown_text(format_production_speedup(t.standing)) : "-",
        t.best ? fixed(t.baseline_sol_percent, 1) + "% -> " + fixed(t.best->sol_percent, 1) + "%"
               : "-",
        t.best ? markdown_text(format_score(t.standing)) : "-", markdown_text(t.best_origin),
        failures.empty() ? "-" : join(failures, ", "));
  }

  for (const auto& [task, why] : data.parked) {
    out += fmt::format("\n**{}** was parked: {}.\n", markdown_text(task), markdown_text(why));
  }
  for (const auto& [dir, why] : data.refused) {
    // The reason's own lines ("did you mean") stay lines, indented under the folder.
    std::vector<std::string> lines;
    for (const std::string& line : split(why, '\n')) lines.push_back(markdown_text(line));
    out += fmt::format("\n**{}** was refused: {}\n", markdown_text(dir), join(lines, "\n  "));
  }
  for (const auto& t : data.tasks) {
    if (t.stale_judgment.empty()) continue;
    out += fmt::format("\n**{}**: its best kernel was {}; {}.\n", markdown_text(t.task),
                       markdown_text(t.stale_judgment), memory::kRejudgeAdvice);
  }

  out += where_time_goes(data);
  out += "\n### Wins\n\n";
  if (data.wins.empty()) return out + "No win recorded.\n";
  out +=
      "| task | speedup | change | from | why it is faster |\n| --- | ---: | --- | --- | --- |\n";
  for (const auto& w : data.wins) {
    out += fmt::format("| {} | {} | kernel {} -> {} | {} | {} |\n", markdown_text(w.pair.task),
                       format_speedup(w.pair.speedup), w.slow.id, w.fast.id,
                       markdown_text(kernel_author(w.fast.origin)), markdown_text(w.pair.summary));
  }
  out += "\n";
  for (const auto& w : data.wins) {
    std::string body = w.diff;
    if (!body.empty() && body.back() != '\n') body += '\n';
    std::string fence = fence_for(body);
    out += fmt::format("<details><summary>{} {}: kernel {} -> {}</summary>\n\n{}diff\n{}{}\n\n",
                       html_text(w.pair.task), format_speedup(w.pair.speedup), w.slow.id, w.fast.id,
                       fence, body, fence);
    out += "</details>\n\n";
  }
  return out;
}

}  // namespace kopt::report
