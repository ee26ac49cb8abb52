#include "agents/coder.h"

#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "llm/extract.h"

namespace kopt::agents {

namespace {

// Compile logs of broken templates run to megabytes; the first errors are what matter.
constexpr size_t kMaxFailureChars = 6000;

std::string plan_text(const Plan& plan) {
  if (plan.detail.empty()) return plan.title;
  return plan.title + "\n\n" + plan.detail;
}

}  // namespace

Result<std::string> extract_kernel_file(const std::string& reply) {
  auto code = extract_code_block(reply, "cuda");
  if (!code) code = extract_code_block(reply, "");
  if (!code) return make_error("coder: no code block in the answer (" + code.error() + ")");
  if (code->find("kopt:plan") == std::string::npos) {
    return make_error(
        "coder: the kernel file has no /* kopt:plan ... */ launch plan; every kernel file must "
        "carry one");
  }
  return std::move(*code);
}

Result<std::string> Coder::write(const WorkContext& context, const Plan& plan, AgentUsage& usage) {
  auto values = work_values(context);
  values["plan"] = plan_text(plan);
  values["kernel_format"] = caller_.prompts().kernel_format();
  values["earlier_answers"] =
      context.repeats.empty() ? std::string("(none)") : "- " + join(context.repeats, "\n- ");
  auto reply =
      caller_.ask("coder", "coder.txt", values, context.task.name, usage, {context.temperature});
  if (!reply) return make_error(reply.error());
  return extract_kernel_file(*reply);
}

Result<std::string> Coder::repair(const WorkContext& context, const Plan& plan,
                                  const std::string& candidate, const Judgement& failure,
                                  int attempt, int max_attempts, AgentUsage& usage,
                                  const std::vector<std::string>& earlier_attempts) {
  auto values = task_values(context.task);
  values["current_kernel"] = context.current.source;
  values["earlier_attempts"] = earlier_attempts.empty()
                                   ? std::string("(none: this is the plan's first repair)")
                                   : "- " + join(earlier_attempts, "\n- ");
  values["plan"] = plan_text(plan);
  values["candidate_kernel"] = candidate;
  values["failure_kind"] = failure.kind;
  values["failure"] = shorten(failure.detail, kMaxFailureChars);
  values["attempt"] = std::to_string(attempt);
  values["max_attempts"] = std::to_string(max_attempts);
  values["kernel_format"] = caller_.prompts().kernel_format();
  auto reply =
      caller_.ask("coder", "repair.txt", values, context.task.name, usage, {context.temperature});
  if (!reply) return make_error(reply.error());
  return extract_kernel_file(*reply);
}

CoderOutcome Coder::develop(const WorkContext& context, const Plan& plan, const Judge& judge,
                            int max_repairs, AgentUsage& usage) {
  CoderOutcome outcome;
  auto written = write(context, plan, usage);
  if (!written) {
    outcome.error = written.error();
    return outcome;
  }
  std::string source = std::move(*written);
  for (int attempt = 1;; ++attempt) {
    outcome.attempts = attempt;
    outcome.source = source;
    Judgement judgement = judge(source, attempt);
    if (judgement.accepted) {
      outcome.accepted = true;
      return outcome;
    }
    outcome.failures.push_back(judgement.kind + ": " + shorten(judgement.detail, 300));
    if (!judgement.repairable || attempt > max_repairs) return outcome;
    spdlog::debug("[{}] repairing '{}' after {} (attempt {} of {})", context.task.name, plan.title,
                  judgement.kind, attempt + 1, max_repairs + 1);
    // The attempts before this one (the failure just judged is shown in full on its own).
    std::vector<std::string> earlier(outcome.failures.begin(), outcome.failures.end() - 1);
    auto repaired =
        repair(context, plan, source, judgement, attempt + 1, max_repairs + 1, usage, earlier);
    if (!repaired) {
      outcome.error = repaired.error();
      return outcome;
    }
    source = std::move(*repaired);
  }
}

}  // namespace kopt::agents
