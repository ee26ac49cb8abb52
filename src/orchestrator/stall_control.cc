// How the search loop reacts to a model that stalls and to spend that runs too fast: it backs a
// task off (exponential delay, other tasks first, a hotter temperature, other memory examples),
// parks it with the reason when the stall goes on, does the same for the model as a whole, and
// holds new LLM work back while the spend rate is above its limit. Everything here runs under
// the orchestrator's mutex except check_spend_rate(), which takes it.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/orchestrator/orchestrator.h"

namespace kopt::orchestrator {

namespace {

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

void Orchestrator::charge(TaskState& task, const agents::AgentUsage& usage) {
  task.charge(usage);
  usage_.add(usage);
  spend_rate_.add(Clock::now(), usage.cost_usd);
}

std::optional<double> Orchestrator::raised_temperature(const std::string& agent,
                                                       double boost) const {
  if (boost <= 0 || !deps_.llm) return std::nullopt;
  auto limits = deps_.llm->agent_limits(agent);
  if (!limits || !limits->temperature || !limits->max_temperature) return std::nullopt;
  double t = std::min(*limits->max_temperature, *limits->temperature + boost);
  if (t <= *limits->temperature) return std::nullopt;
  return t;
}

void Orchestrator::back_off(TaskState& task, std::chrono::milliseconds delay,
                            const std::string& why) {
  task.back_off(Clock::now() + delay, options_.stall.temperature_step);
  auto hotter = raised_temperature("coder", task.temperature_boost());
  spdlog::warn(
      "[{}] backing off for {:.1f} s ({}): other tasks go first, then {}other memory "
      "examples",
      task.spec().name, seconds(delay), why,
      hotter ? fmt::format("temperature {:.2f}, ", *hotter) : std::string());
}

void Orchestrator::park(TaskState& task, const std::string& why) {
  if (!task.park(why)) return;
  spdlog::warn("[{}] parked: {}; no more LLM work for this task in this run{}", task.spec().name,
               why, task.tuning() ? " (the tuner finishes its queue)" : "");
}

void Orchestrator::park_model(const std::string& why) {
  if (!model_parked_.empty()) return;
  model_parked_ = why;
  spdlog::error("{}: no more LLM work in this run; GPU work goes on", why);
  for (TaskState& task : tasks_) park(task, why);
}

bool Orchestrator::llm_held_back(Clock::time_point now) const {
  return !model_parked_.empty() || now < model_not_before_ || !alarm_.empty();
}

void Orchestrator::record_coder_calls(TaskState& task, const std::vector<CallOutcome>& calls) {
  for (CallOutcome call : calls) {
    auto advice = task.record_coder_call(call);
    // The model as a whole stalls when it stops writing kernels at all; which kernels it
    // repeats is a matter of the task.
    bool wrote_kernel = call == CallOutcome::kNewKernel || call == CallOutcome::kBrokenKernel ||
                        call == CallOutcome::kRepeat;
    auto model_advice = model_stall_.record(wrote_kernel ? CallOutcome::kNewKernel : call);
    if (advice == StallDetector::Advice::kPark) {
      park(task, "stalled: " + task.stall().describe());
    } else if (advice == StallDetector::Advice::kBackOff && task.parked().empty()) {
      back_off(task, task.stall().next_delay(), task.stall().describe());
    }
    if (model_advice == StallDetector::Advice::kPark) {
      park_model("stalled: the coder model " + deps_.coder_model + ": " + model_stall_.describe());
    } else if (model_advice == StallDetector::Advice::kBackOff && model_parked_.empty()) {
      model_not_before_ = Clock::now() + model_stall_.next_delay();
      spdlog::warn("backing off the coder model {} for {:.1f} s: {}", deps_.coder_model,
                   seconds(model_stall_.next_delay()), model_stall_.describe());
    }
  }
}

void Orchestrator::planner_stalled(TaskState& task, const std::string& note,
                                   const std::string& why) {
  int stale = task.on_planner_stale(note);
  const StallSettings& s = options_.stall;
  if (stale >= s.planner_stale_answers) {
    park(task, fmt::format("stalled: the planner's last {} answers {}", stale, why));
    return;
  }
  auto delay = s.backoff_initial;
  for (int i = 1; i < stale && delay < s.backoff_max; ++i) delay *= 2;
  back_off(task, std::min(delay, s.backoff_max), "the planner's answer " + why);
}

void Orchestrator::check_spend_rate() {
  if (!options_.budgets.max_usd_per_hour) return;
  std::lock_guard lock(mutex_);
  double limit = *options_.budgets.max_usd_per_hour;
  double rate = spend_rate_.usd_per_hour(Clock::now());
  if (rate > limit && alarm_.empty()) {
    alarm_ = fmt::format(
        "spend rate ${:.2f}/h over the last {} is above daemon.budgets.max_usd_per_hour "
        "(${:.2f}/h): new LLM work waits until it falls; GPU work goes on",
        rate, format_duration(std::chrono::duration<double>(spend_rate_.window()).count()), limit);
    spdlog::warn("{}", alarm_);
  } else if (rate <= limit && !alarm_.empty()) {
    alarm_.clear();
    spdlog::info("spend rate back to ${:.2f}/h, under ${:.2f}/h: LLM work resumes", rate, limit);
  }
}

}  // namespace kopt::orchestrator
