#include "src/report/report_data.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "memory_store/judging_staleness.h"
#include "memory_store/line_diff.h"
#include "memory_store/production_baselines.h"
#include "memory_store/task_best.h"
#include "memory_store/task_counts.h"
#include "sandbox/kernel_profile.h"
#include "src/report/markup.h"

namespace kopt::report {

namespace {

using memory::EvaluationRecord;

// Hours from `origin` (epoch seconds) to `iso`; an unreadable time counts as the origin.
double hours_after(double origin, const std::string& iso) {
  double t = parse_utc_seconds(iso);
  if (t < 0 || origin < 0) return 0;
  return std::max(0.0, (t - origin) / 3600.0);
}

std::string origin_label(const memory::KernelRecord& kernel) {
  if (kernel.origin.tuner) return "tuner";
  if (!kernel.origin.model.empty()) return kernel.origin.model;
  return kernel.origin.agent == Origin::kUnknown ? "unknown" : origin_name(kernel.origin.agent);
}

// The earliest parseable time among the records: the origin of the axes without a run.
template <typename Records>
void earliest(const Records& records, double& origin, std::string& origin_text) {
  for (const auto& r : records) {
    double t = parse_utc_seconds(r.created_at);
    if (t >= 0 && (origin < 0 || t < origin)) {
      origin = t;
      origin_text = r.created_at;
    }
  }
}

}  // namespace

bool VerdictOrder::operator()(Verdict a, Verdict b) const {
  return std::pair(a != Verdict::kOk, verdict_name(a)) <
         std::pair(b != Verdict::kOk, verdict_name(b));
}

std::string kernel_author(const memory::KernelOrigin& origin) {
  if (origin.tuner) return "tuner";
  return origin.model.empty() ? origin_name(origin.agent) : origin.model;
}

std::vector<std::string> profile_cells(const std::string& profile_json) {
  auto p = stored_kernel_profile(profile_json);
  if (!p) return {};
  auto top = p->top_stalls(1);
  return {
      fixed(p->dram_percent, 1) + "%",
      fixed(p->l2_hit_percent, 1) + "%",
      fixed(p->sm_percent, 1) + "%",
      fixed(p->occupancy_percent, 1) + "%",
      top.empty() ? "-" : stall_display_name(top[0].reason) + " " + fixed(top[0].percent, 0) + "%",
      fixed(p->bank_conflict_percent(), 1) + "%"};
}

const std::vector<std::string>& profile_headers() {
  static const std::vector<std::string> headers = {"DRAM % of peak", "L2 hit",    "SM throughput",
                                                   "occupancy",      "top stall", "bank conflicts"};
  return headers;
}

std::vector<ProfileRow> profile_rows(const ReportData& data) {
  std::vector<ProfileRow> rows;
  for (const auto& t : data.tasks) {
    auto base = profile_cells(t.baseline_profile_json);
    auto best = t.best ? profile_cells(t.best->profile_json) : std::vector<std::string>{};
    if (!base.empty()) rows.push_back({t.task, "baseline", base});
    if (!best.empty()) rows.push_back({t.task, "best", best});
  }
  return rows;
}

namespace {

Status summarize_tasks(memory::MemoryStore& store, const std::vector<EvaluationRecord>& evals,
                       double origin, int verifier_version, ReportData& data) {
  std::map<std::string, TaskSummary> by_task;
  std::map<std::string, std::map<Verdict, std::map<std::string, int64_t>, VerdictOrder>> details;
  std::map<std::string, double> running_best;
  for (const auto& e : evals) {
    TaskSummary& t = by_task[e.task];
    t.task = e.task;
    ++t.candidates;
    ++t.verdicts[e.verdict];
    if (std::find(data.gpus.begin(), data.gpus.end(), e.gpu.model) == data.gpus.end())
      data.gpus.push_back(e.gpu.model);
    if (e.verdict != Verdict::kOk) {
      // A screened kernel is no failure: its detail (its median against the best) says nothing
      // the counts do not.
      if (e.verdict != Verdict::kScreened) ++details[e.task][e.verdict][first_line(e.detail, 160)];
      continue;
    }
    ++t.verified;
    if (e.profile_json != "{}" && !e.profile_json.empty()) {
      auto kernel = store.kernel(e.kernel_id);
      if (!kernel) return make_error(kernel.error());
      if (*kernel && (*kernel)->origin.agent == Origin::kBaseline)
        t.baseline_profile_json = e.profile_json;
    }
    if (e.median_us <= 0) continue;
    if (!t.best || memory::better_best(e, *t.best)) t.best = e;
    if (t.best_speedup.empty()) t.best_speedup.push_back({0.0, 1.0});
    double& best = running_best.try_emplace(e.task, 1.0).first->second;
    if (e.speedup > best) {
      best = e.speedup;
      t.best_speedup.push_back({hours_after(origin, e.created_at), best});
    }
  }
  for (auto& [name, t] : by_task) {
    for (const auto& [verdict, counts] : details[name]) {
      auto top = std::max_element(counts.begin(), counts.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
      t.example_failure[verdict] = top->first;
    }
    if (!t.best_speedup.empty()) t.best_speedup.push_back({data.span_hours, running_best[name]});
    if (t.best) {
      t.baseline_us = t.best->baseline_us;
      t.standing = memory::evaluation_standing(store.database(), *t.best);
      if (t.best->baseline_us > 0)
        t.baseline_sol_percent = t.best->sol_percent * t.best->median_us / t.best->baseline_us;
      auto kernel = store.kernel(t.best->kernel_id);
      if (!kernel) return make_error(kernel.error());
      t.best_origin = *kernel ? origin_label(**kernel) : "unknown";
      auto task = store.find_task(name);
      t.stale_judgment = memory::stale_judgment(
          *t.best, task && *task ? (*task)->judging_spec_sha256 : "", verifier_version);
    }
    data.tasks.push_back(std::move(t));
  }
  // Candidates as `kopt status` counts them (memory_store/task_counts.h): the baseline's own
  // evaluations are not candidates.
  auto counts = memory::task_counts(store.database(),
                                    data.run ? std::optional<int64_t>(data.run->id) : std::nullopt);
  if (!counts) return make_error(counts.error());
  for (TaskSummary& t : data.tasks) {
    auto found = counts->find(t.task);
    t.candidates = found == counts->end() ? 0 : found->second.candidates;
    t.verified = found == counts->end() ? 0 : found->second.verified;
  }
  return ok_status();
}

void summarize_llm(const std::vector<memory::LlmCallRecord>& calls, double origin,
                   ReportData& data) {
  std::map<std::string, memory::RunTotals> by_model;
  memory::RunTotals& total = data.llm_totals;
  for (const auto& call : calls) {
    for (memory::RunTotals* sum : {&total, &by_model[call.model]}) {
      sum->add_call(call.status != memory::kLlmCallOk, call.prompt_tokens, call.completion_tokens,
                    call.cost_usd);
    }
    double h = hours_after(origin, call.created_at);
    data.prompt_tokens.push_back({h, double(total.input_tokens)});
    data.completion_tokens.push_back({h, double(total.output_tokens)});
    data.cost_usd.push_back({h, total.cost_usd});
  }
  if (!calls.empty()) {
    for (auto* series : {&data.prompt_tokens, &data.completion_tokens, &data.cost_usd}) {
      series->insert(series->begin(), {0.0, 0.0});
    }
  }
  data.llm_by_model.assign(by_model.begin(), by_model.end());
}

// A kernel is stored once, under the run that first wrote it: a pair recorded while a run was
// going on belongs to that run even when its fast kernel was found earlier.
bool during_run(const memory::RunRecord& run, const std::string& created_at) {
  double t = parse_utc_seconds(created_at), start = parse_utc_seconds(run.started_at);
  double end = run.finished_at.empty() ? -1 : parse_utc_seconds(run.finished_at);
  return t >= 0 && start >= 0 && t >= start && (end < 0 || t <= end);
}

Status collect_wins(memory::MemoryStore& store, const ReportScope& scope, ReportData& data) {
  memory::WinsFilter filter;
  filter.min_speedup = 1.0;
  filter.limit = 1000000;  // a run filter is applied below, on the kernels
  auto pairs = store.wins(filter);
  if (!pairs) return make_error(pairs.error());
  for (const auto& pair : *pairs) {
    if (int(data.wins.size()) >= scope.max_wins) break;
    if (pair.is_negative || pair.speedup <= 1.0) continue;
    auto slow = store.kernel(pair.slow_kernel_id);
    auto fast = store.kernel(pair.fast_kernel_id);
    if (!slow) return make_error(slow.error());
    if (!fast) return make_error(fast.error());
    if (!*slow || !*fast) continue;
    if (data.run && (*fast)->run_id != data.run->id && !during_run(*data.run, pair.created_at))
      continue;
    Win win{pair, **slow, **fast, ""};
    win.diff = memory::unified_diff(win.slow.source, win.fast.source,
                                    "kernel " + std::to_string(win.slow.id),
                                    "kernel " + std::to_string(win.fast.id));
    data.wins.push_back(std::move(win));
  }
  return ok_status();
}

// The daemon publishes its progress (orchestrator/progress.h) in daemon_status; a task it parked
// and a task folder it refused say why there. Absent in a database no daemon wrote: nothing to add.
void read_parked_tasks(memory::MemoryStore& store, int64_t run_id, ReportData& data) {
  sql::Database& db = store.database();
  if (!db.has_table("daemon_status")) return;
  auto text = db.query_text("SELECT status_json FROM daemon_status WHERE run_id = " +
                            std::to_string(run_id));
  if (!text) return;
  auto status = parse_json_bounded(*text);
  if (!status.is_object() || !status.contains("tasks") || !status["tasks"].is_array()) return;
  for (const auto& t : status["tasks"]) {
    if (t.is_object() && t.value("state", "") == "parked") {
      data.parked.emplace_back(t.value("name", ""), t.value("note", ""));
    }
  }
  if (!status.contains("refused") || !status["refused"].is_array()) return;
  for (const auto& r : status["refused"]) {
    if (r.is_object()) data.refused.emplace_back(r.value("dir", ""), r.value("reason", ""));
  }
}

}  // namespace

Result<ReportData> load_report_data(memory::MemoryStore& store, const std::string& database,
                                    const ReportScope& scope) {
  ReportData data;
  data.database = database;
  data.generated_at = memory::utc_timestamp();
  if (scope.run_id) {
    auto run = store.run(*scope.run_id);
    if (!run) return make_error(run.error());
    if (!*run) return make_error("no run " + std::to_string(*scope.run_id) + " in " + database);
    data.run = **run;
  }
  auto evals = store.list_evaluations(scope.run_id);
  if (!evals) return make_error(evals.error());
  auto calls = store.list_llm_calls(scope.run_id);
  if (!calls) return make_error(calls.error());

  double origin = -1;
  if (data.run) {
    origin = parse_utc_seconds(data.run->started_at);
    data.start = data.run->started_at;
  }
  if (origin < 0) {
    earliest(*evals, origin, data.start);
    earliest(*calls, origin, data.start);
  }
  for (const auto& e : *evals)
    data.span_hours = std::max(data.span_hours, hours_after(origin, e.created_at));
  for (const auto& c : *calls)
    data.span_hours = std::max(data.span_hours, hours_after(origin, c.created_at));
  if (data.run && !data.run->finished_at.empty())
    data.span_hours = std::max(data.span_hours, hours_after(origin, data.run->finished_at));

  if (auto s = summarize_tasks(store, *evals, origin, scope.verifier_version, data); !s)
    return make_error(s.error());
  if (data.run) read_parked_tasks(store, data.run->id, data);
  summarize_llm(*calls, origin, data);
  if (auto s = collect_wins(store, scope, data); !s) return make_error(s.error());

  for (const auto& t : data.tasks) {
    data.evaluations += t.candidates;
    data.verified += t.verified;
    for (const auto& [verdict, count] : t.verdicts) {
      if (std::find(data.verdict_order.begin(), data.verdict_order.end(), verdict) ==
          data.verdict_order.end())
        data.verdict_order.push_back(verdict);
    }
  }
  std::sort(data.verdict_order.begin(), data.verdict_order.end(), VerdictOrder{});
  return data;
}

std::string describe_scope(const ReportData& data) {
  if (!data.run) return "every run in the memory";
  std::string text = "run " + std::to_string(data.run->id) + " (" +
                     run_status_name(data.run->status) + "), started " + data.run->started_at;
  if (!data.run->finished_at.empty()) text += ", finished " + data.run->finished_at;
  return text;
}

double sol_score_gained(const TaskSummary& task) {
  const Standing& s = task.standing;
  if (!task.best || !s.score || task.baseline_us <= 0 || task.baseline_sol_percent <= 0) return 0;
  const double sol_us = task.baseline_us * task.baseline_sol_percent / 100;
  // T_b as the best's S used it: production = speedup_vs_production x the best's time.
  const double reference_us =
      s.production_name.empty() ? task.baseline_us : s.speedup_vs_production * task.best->median_us;
  auto before = sol_score(task.baseline_us, reference_us, sol_us);
  return before ? std::max(0.0, *s.score - *before) : 0;
}

std::optional<double> tokens_per_sol_score_gained(const ReportData& data) {
  double gained = 0;
  for (const auto& t : data.tasks) gained += sol_score_gained(t);
  if (gained <= 0) return std::nullopt;
  return static_cast<double>(data.llm_totals.input_tokens + data.llm_totals.output_tokens) / gained;
}

double geomean_best_speedup(const ReportData& data) {
  double log_sum = 0;
  int count = 0;
  for (const auto& t : data.tasks) {
    if (t.best && t.best->speedup > 0) {
      log_sum += std::log(t.best->speedup);
      ++count;
    }
  }
  return count ? std::exp(log_sum / count) : 0;
}

}  // namespace kopt::report
