#include "tests/orchestrator/stall_scenario.h"

#include <fmt/format.h>

#include <set>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "src/orchestrator/kernel_fingerprint.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::testing {

using nlohmann::json;

namespace {

std::filesystem::path write_config(const StallScenario& s, const std::filesystem::path& dir,
                                   const FakeLlmServer& server) {
  json provider = {
      {"type", s.anthropic ? "anthropic" : "openai"},
      {"base_url", s.anthropic ? server.anthropic_base_url() : server.openai_base_url()},
      {"timeout_s", 30},
      {"max_attempts", 2},
      {"backoff_initial_s", 0.1}};
  json agents = json::object(), prices = json::object();
  for (const char* role : {"planner", "coder", "summarizer"}) {
    std::string model = std::string("stalling-") + role;
    json agent = {{"provider", "fake"},
                  {"model", model},
                  {"max_tokens", 4096},
                  {"temperature", s.temperature}};
    agent.merge_patch(s.agent_config);
    agents[role] = agent;
    prices[model] = {{"input_per_mtok", s.input_per_mtok}, {"output_per_mtok", s.output_per_mtok}};
  }
  json config = {
      {"format", 1},
      {"llm", {{"providers", {{"fake", provider}}}, {"agents", agents}, {"prices", prices}}},
      {"daemon", s.daemon_config}};
  auto path = dir / "config.json";
  write_text(path, config.dump(2));
  return path;
}

// Distinct fingerprints of the coder's kernels that were evaluated.
int64_t new_kernels(const std::filesystem::path& db) {
  std::string ids = query_text(
      db,
      "SELECT group_concat(k.id) FROM kernels k WHERE k.origin_agent = 'coder' AND "
      "k.origin_tuner = 0 AND EXISTS (SELECT 1 FROM evaluations e WHERE e.kernel_id = k.id)");
  std::set<std::string> fingerprints;
  for (const std::string& id : split(ids, ',')) {
    if (trim(id).empty()) continue;
    fingerprints.insert(orchestrator::kernel_fingerprint(
        query_text(db, "SELECT source FROM kernels WHERE id = " + trim(id))));
  }
  return static_cast<int64_t>(fingerprints.size());
}

}  // namespace

double StallReport::calls_per_new_kernel() const {
  return new_kernels > 0 ? static_cast<double>(llm_calls) / new_kernels : 0;
}

double StallReport::usd_per_new_kernel() const { return new_kernels > 0 ? usd / new_kernels : 0; }

Result<StallReport> run_stall_scenario(const StallScenario& s, const std::filesystem::path& dir) {
  auto model = StallingModel::load(
      std::filesystem::path(KOPT_SOURCE_DIR) / "tests/orchestrator/replay", s.model);
  if (!model) return make_error(model.error());
  std::shared_ptr<StallingModel> stalling = std::move(*model);
  FakeLlmServer::Options options;
  options.stalling = stalling;
  auto server = FakeLlmServer::start(options);
  if (!server) return make_error(server.error());

  for (const auto& task : s.tasks) copy_task(task, dir / "tasks");
  auto config = write_config(s, dir, **server);
  auto db = dir / "memory.db";
  std::vector<std::string> argv = {s.daemon,
                                   "--db",
                                   db.string(),
                                   "--no-display",
                                   "--tasks",
                                   (dir / "tasks").string(),
                                   "--config",
                                   config.string(),
                                   "--max-usd",
                                   fmt::format("{}", s.max_usd),
                                   "--candidates-per-task",
                                   std::to_string(s.candidates_per_task),
                                   "--hours",
                                   fmt::format("{}", s.hours)};
  auto started = std::chrono::steady_clock::now();
  auto out = run_command(argv, "", std::chrono::seconds(600));
  if (!out) return make_error(out.error());
  (*server)->stop();

  StallReport r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  r.exit_code = out->exit_code;
  r.stdout_text = out->stdout_text;
  r.stderr_text = out->stderr_text;
  auto log = read_file(dir / "runs/memory/1/kopt.log");
  r.log = log ? *log : "";
  r.llm_calls = query_count(db, "SELECT count(*) FROM llm_calls");
  r.coder_calls = query_count(db, "SELECT count(*) FROM llm_calls WHERE agent = 'coder'");
  r.usd =
      std::atof(query_text(db, "SELECT printf('%.6f', total(cost_usd)) FROM llm_calls").c_str());
  r.evaluations = query_count(db, "SELECT count(*) FROM evaluations");
  r.new_kernels = new_kernels(db);
  r.model = stalling->stats();
  r.calls_while_stalled = r.model.calls_after_last_new;
  r.usd_while_stalled = (r.model.input_tokens_after_last_new * s.input_per_mtok +
                         r.model.output_tokens_after_last_new * s.output_per_mtok) /
                        1e6;
  r.status = json::parse(query_text(db, "SELECT status_json FROM daemon_status"), nullptr, false);
  return r;
}

std::string stall_report_header() {
  return "| scenario | LLM calls | new kernels evaluated | calls per new kernel | spent | $ per "
         "new "
         "kernel | calls after the last new kernel | $ after the last new kernel (share of "
         "--max-usd) | wall time | how the run ended |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |";
}

std::string stall_report_row(const std::string& name, const StallScenario& s,
                             const StallReport& r) {
  std::string ended = split(trim(r.stdout_text), '\n').empty()
                          ? std::string("?")
                          : split(trim(r.stdout_text), '\n').back();
  return fmt::format(
      "| {} | {} | {} | {:.1f} | ${:.2f} | ${:.3f} | {} | ${:.2f} ({:.0f}%) | {:.0f} s | {} |",
      name, r.llm_calls, r.new_kernels, r.calls_per_new_kernel(), r.usd, r.usd_per_new_kernel(),
      r.calls_while_stalled, r.usd_while_stalled, 100 * r.usd_while_stalled / s.max_usd, r.seconds,
      ended);
}

}  // namespace kopt::testing
