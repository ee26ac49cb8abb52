#include "src/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "memory_store/judging_staleness.h"
#include "memory_store/line_diff.h"
#include "src/report/markup.h"
#include "src/report/svg_chart.h"

namespace kopt::report {

namespace {

// System fonts only: a web font would be a download.
constexpr const char* kStyle = R"css(
:root { --ink: #1d2430; --muted: #5f6b7a; --line: #d9dee5; --bg: #f6f7f9; --ok: #59a14f; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: var(--bg); }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: var(--muted); margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 10px; }
.grid.wide { grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px; overflow-x: auto; }
svg.chart { display: block; font-size: 12px; max-width: 100%; height: auto; }
svg .title { font-weight: 600; font-size: 13px; fill: var(--ink); }
svg text { fill: var(--muted); }
svg .label { fill: var(--ink); }
svg .value { font-size: 11px; }
svg .grid { stroke: #e8ebef; }
svg .axis { stroke: #9aa4b1; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 9px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: 13px; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:hover td { background: #fafbfc; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre.diff { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 0;
           overflow-x: auto; margin: 6px 0 18px; }
pre.diff span { display: block; padding: 0 10px; white-space: pre; }
pre.diff .add { background: #e6f6e6; color: #1b5e20; }
pre.diff .del { background: #fdecea; color: #8e1b12; }
pre.diff .hunk { color: #5a4fcf; background: #f1f0ff; }
pre.diff .file { color: var(--muted); }
.empty { color: var(--muted); font-style: italic; }
a { color: #2f6db3; }
)css";

std::string card(const std::string& value, const std::string& label) {
  return "<div class=\"card\"><div class=\"v\">" + html_text(value) + "</div><div class=\"k\">" +
         html_text(label) + "</div></div>";
}

std::string verdict_color(Verdict verdict, size_t index) {
  if (verdict == Verdict::kOk) return "#59a14f";
  // Failures use the palette after its green-ish entries, in the report's verdict order.
  static const char* kFailure[] = {"#e15759", "#f28e2b", "#edc948", "#b07aa1", "#9c755f",
                                   "#4e79a7", "#ff9da7", "#76b7b2", "#bab0ac", "#1f3b5a"};
  return kFailure[index % (sizeof(kFailure) / sizeof(kFailure[0]))];
}

std::string header(const ReportData& data) {
  std::string gpus = data.gpus.empty() ? "no GPU evaluations" : join(data.gpus, ", ");
  std::string out = "<header><h1>kopt morning report</h1><p class=\"sub\">" +
                    html_text(describe_scope(data)) + " &middot; " + html_text(gpus) +
                    " &middot; memory <code>" + html_text(data.database) +
                    "</code> &middot; generated " + html_text(data.generated_at) + "</p>";
  int improved = 0;
  std::string best_task;
  double best = 0;
  for (const auto& t : data.tasks) {
    if (t.best && t.best->speedup > 1.0) ++improved;
    if (t.best && t.best->speedup > best) {
      best = t.best->speedup;
      best_task = t.task;
    }
  }
  double geomean = geomean_best_speedup(data);
  out += "<div class=\"cards\">";
  out += card(std::to_string(data.tasks.size()), "tasks");
  out += card(std::to_string(data.evaluations), "candidates judged");
  out += card(data.evaluations
                  ? fixed(100.0 * double(data.verified) / double(data.evaluations), 0) + "%"
                  : "-",
              "verified");
  out += card(std::to_string(improved) + " / " + std::to_string(data.tasks.size()),
              "tasks faster than baseline");
  out += card(format_speedup(geomean), "geomean best speedup");
  out += card(best > 0 ? format_speedup(best) + " " + best_task : "-", "largest speedup");
  out += card(std::to_string(data.wins.size()), "wins");
  out += card("$" + fixed(data.llm_totals.cost_usd, 2), "LLM cost");
  out += card(short_number(double(data.llm_totals.input_tokens + data.llm_totals.output_tokens)),
              "LLM tokens");
  out += "</div></header>";
  return out;
}

std::string speedup_section(const ReportData& data) {
  std::string out =
      "<section id=\"speedup\"><h2>Best speedup over time</h2><p class=\"sub\">Per task, the best "
      "verified speedup over the baseline so far, against hours since the start.</p>";
  std::string charts;
  size_t i = 0;
  for (const auto& t : data.tasks) {
    if (t.best_speedup.empty()) continue;
    LineChart chart;
    chart.id = "speedup-" + t.task;
    chart.kind = "speedup";
    chart.title = t.task + "  " + format_speedup(t.best_speedup.back().second);
    chart.x_label = "hours";
    chart.y_label = "speedup";
    chart.width = 300;
    chart.height = 180;
    chart.legend = false;
    chart.series.push_back({t.task, palette_color(i++), t.best_speedup, true});
    charts += "<div class=\"panel\">" + render_line_chart(chart) + "</div>";
  }
  if (charts.empty()) return out + "<p class=\"empty\">No verified candidate yet.</p></section>";
  return out + "<div class=\"grid\">" + charts + "</div></section>";
}

std::string sol_section(const ReportData& data) {
  BarChart chart;
  chart.id = "sol";
  chart.kind = "sol";
  chart.value_label = "% of the speed-of-light bound";
  chart.series_names = {"baseline", "best"};
  chart.series_colors = {"#bab0ac", "#4e79a7"};
  for (const auto& t : data.tasks) {
    if (!t.best) continue;
    chart.categories.push_back(t.task);
    chart.values.push_back({t.baseline_sol_percent, t.best->sol_percent});
  }
  std::string out =
      "<section id=\"sol-section\"><h2>Speed of light</h2><p class=\"sub\">The share of the "
      "speed-of-light bound (max of flops over peak and bytes over DRAM bandwidth) that the "
      "baseline and the best kernel reach.</p>";
  if (chart.categories.empty())
    return out + "<p class=\"empty\">No timed kernel yet.</p></section>";
  return out + "<div class=\"panel\">" + render_bar_chart(chart) + "</div></section>";
}

std::string verdict_section(const ReportData& data) {
  BarChart chart;
  chart.id = "verdicts";
  chart.kind = "verdicts";
  chart.value_label = "candidates";
  chart.stacked = true;
  for (Verdict v : data.verdict_order) chart.series_names.push_back(verdict_name(v));
  for (size_t i = 0; i < data.verdict_order.size(); ++i)
    chart.series_colors.push_back(verdict_color(data.verdict_order[i], i));
  std::string failures;
  for (const auto& t : data.tasks) {
    chart.categories.push_back(t.task);
    std::vector<double> row;
    for (const auto& v : data.verdict_order) {
      auto it = t.verdicts.find(v);
      row.push_back(it == t.verdicts.end() ? 0 : double(it->second));
    }
    chart.values.push_back(row);
    for (const auto& [verdict, why] : t.example_failure) {
      failures += "<tr><td>" + html_text(t.task) + "</td><td>" + html_text(verdict_name(verdict)) +
                  "</td><td class=\"n\">" + std::to_string(t.verdicts.at(verdict)) +
                  "</td><td><code>" + html_text(why) + "</code></td></tr>";
    }
  }
  std::string out =
      "<section id=\"verdicts-section\"><h2>Verdicts</h2><p class=\"sub\">What became of every "
      "candidate, per task.</p>";
  if (chart.categories.empty())
    return out + "<p class=\"empty\">No candidate judged.</p></section>";
  out += "<div class=\"panel\">" + render_bar_chart(chart) + "</div>";
  if (!failures.empty()) {
    out +=
        "<h3>Why candidates failed</h3><table id=\"failures\"><tr><th>task</th><th>verdict</th>"
        "<th class=\"n\">count</th><th>most common reason</th></tr>" +
        failures + "</table>";
  }
  return out + "</section>";
}

std::string llm_section(const ReportData& data) {
  std::string out = "<section id=\"llm\"><h2>LLM tokens and cost</h2>";
  if (data.llm_totals.calls == 0) return out + "<p class=\"empty\">No LLM calls.</p></section>";
  // Running totals: each call adds a step.
  auto cumulative = [](const std::string& id, const std::string& title, const std::string& unit,
                       std::vector<LineSeries> series) {
    LineChart chart;
    chart.id = chart.kind = id;
    chart.title = title;
    chart.x_label = "hours";
    chart.y_label = unit;
    chart.series = std::move(series);
    return chart;
  };
  LineChart tokens = cumulative("llm-tokens", "tokens (cumulative)", "tokens",
                                {{"prompt", "#4e79a7", data.prompt_tokens, true},
                                 {"completion", "#f28e2b", data.completion_tokens, true}});
  LineChart cost = cumulative("llm-cost", "cost in USD (cumulative)", "USD",
                              {{"cost", "#e15759", data.cost_usd, true}});
  out += "<div class=\"grid wide\"><div class=\"panel\">" + render_line_chart(tokens) +
         "</div><div class=\"panel\">" + render_line_chart(cost) + "</div></div>";
  out +=
      "<h3>By model</h3><table id=\"llm-models\"><tr><th>model</th><th class=\"n\">calls</th>"
      "<th class=\"n\">failed</th><th class=\"n\">prompt tokens</th><th class=\"n\">completion "
      "tokens</th><th class=\"n\">cost</th></tr>";
  for (const auto& [model, t] : data.llm_by_model) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">${:.2f}</td></tr>",
        html_text(model.empty() ? "(none)" : model), t.calls, t.failed_calls, t.input_tokens,
        t.output_tokens, t.cost_usd);
  }
  return out + "</table></section>";
}

// Each task's best kernel's hardware counters beside its baseline's, where they were profiled;
// nothing when no profile is stored.
std::string profile_table(const ReportData& data) {
  std::string rows;
  for (const auto& r : profile_rows(data)) {
    rows += "<tr><td>" + html_text(r.task) + "</td><td>" + r.kernel + "</td>";
    for (const auto& c : r.cells) rows += "<td class=\"n\">" + html_text(c) + "</td>";
    rows += "</tr>";
  }
  if (rows.empty()) return "";
  std::string head = "<tr><th>task</th><th>kernel</th>";
  for (const auto& h : profile_headers()) head += "<th class=\"n\">" + html_text(h) + "</th>";
  return "<h3>Where the time goes (hardware counters at the timed shape)</h3><table "
         "id=\"profiles\">" +
         head + "</tr>" + rows + "</table>";
}

std::string task_table(const ReportData& data) {
  std::string out =
      "<section id=\"tasks\"><h2>Tasks</h2><table><tr><th>task</th><th class=\"n\">candidates</th>"
      "<th class=\"n\">verified</th><th class=\"n\">baseline</th><th class=\"n\">best</th>"
      "<th class=\"n\">speedup</th><th class=\"n\">vs production</th><th class=\"n\">%SOL "
      "baseline &rarr; best</th><th>S</th><th>best from</th></tr>";
  for (const auto& t : data.tasks) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
        html_text(t.task), t.candidates, t.verified, format_micros(t.baseline_us),
        format_micros(t.best ? t.best->median_us : 0), format_speedup(t.best ? t.best->speedup : 0),
        t.best ? html_text(format_production_speedup(t.standing)) : "-",
        t.best
            ? fixed(t.baseline_sol_percent, 1) + "% &rarr; " + fixed(t.best->sol_percent, 1) + "%"
            : "-",
        t.best ? html_text(format_score(t.standing)) : "-", html_text(t.best_origin));
  }
  out += "</table>";
  for (const auto& [task, why] : data.parked) {
    out += fmt::format("<p><b>{}</b> was parked: {}.</p>", html_text(task), html_text(why));
  }
  for (const auto& [dir, why] : data.refused) {
    out += fmt::format("<div><b>{}</b> was refused:<pre>{}</pre></div>", html_text(dir),
                       html_text(why));
  }
  for (const auto& t : data.tasks) {
    if (t.stale_judgment.empty()) continue;
    out += fmt::format("<p><b>{}</b>: its best kernel was {}; {}.</p>", html_text(t.task),
                       html_text(t.stale_judgment), html_text(memory::kRejudgeAdvice));
  }
  out += profile_table(data);
  return out + "</section>";
}

std::string wins_section(const ReportData& data) {
  std::string out = "<section id=\"wins\"><h2>Wins</h2>";
  if (data.wins.empty()) return out + "<p class=\"empty\">No win recorded.</p></section>";
  out +=
      "<table id=\"wins-table\"><tr><th>task</th><th class=\"n\">speedup</th><th>change</th>"
      "<th>from</th><th>why it is faster</th><th>when</th><th>diff</th></tr>";
  for (const auto& w : data.wins) {
    std::string anchor = "diff-" + std::to_string(w.pair.id);
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td>kernel {} &rarr; {}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td><a href=\"#{}\">diff</a></td></tr>",
        html_text(w.pair.task), format_speedup(w.pair.speedup), w.slow.id, w.fast.id,
        html_text(kernel_author(w.fast.origin)), html_text(w.pair.summary),
        html_text(w.pair.created_at), anchor);
  }
  out += "</table><h2 id=\"diffs\">Diffs</h2>";
  for (const auto& w : data.wins) {
    out += fmt::format(
        "<div class=\"diff-block\" id=\"diff-{}\"><h3>{} {}: kernel {} &rarr; {}</h3>", w.pair.id,
        html_text(w.pair.task), format_speedup(w.pair.speedup), w.slow.id, w.fast.id);
    out += "<pre class=\"diff\">";
    for (const auto& line : memory::split_lines(w.diff)) {
      const char* cls = "ctx";
      if (starts_with(line, "+++") || starts_with(line, "---")) {
        cls = "file";
      } else if (!line.empty() && line[0] == '+') {
        cls = "add";
      } else if (!line.empty() && line[0] == '-') {
        cls = "del";
      } else if (starts_with(line, "@@")) {
        cls = "hunk";
      }
      out += std::string("<span class=\"") + cls + "\">" + html_text(line) + "</span>";
    }
    out += "</pre><p><a href=\"#wins\">back to the wins</a></p></div>";
  }
  return out + "</section>";
}

}  // namespace

std::string render_html(const ReportData& data) {
  std::string out =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>kopt report: " +
      html_text(describe_scope(data)) + "</title><style>" + kStyle + "</style></head><body><main>";
  out += header(data);
  out += speedup_section(data);
  out += sol_section(data);
  out += verdict_section(data);
  out += llm_section(data);
  out += task_table(data);
  out += wins_section(data);
  out += "</main></body></html>\n";
  return out;
}

}  // namespace kopt::report
