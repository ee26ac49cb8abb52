#include "agents/planner.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"
#include "src/llm/extract.h"

namespace kopt::agents {

using nlohmann::json;

std::string plan_key(const std::string& title) {
  std::string key;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return key;
}

namespace {

std::string text_member(const json& object, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (object.contains(key) && object.at(key).is_string()) {
      return trim(object.at(key).get<std::string>());
    }
  }
  return "";
}

}  // namespace

Result<std::vector<Plan>> parse_plans(const std::string& reply) {
  auto parsed = extract_json(reply);
  if (!parsed) return make_error("planner: no JSON in the answer (" + parsed.error() + ")");
  const json* list = &*parsed;
  if (parsed->is_object()) {
    if (!parsed->contains("plans") || !parsed->at("plans").is_array()) {
      return make_error("planner: the answer's JSON object has no \"plans\" array");
    }
    list = &parsed->at("plans");
  }
  if (!list->is_array()) return make_error("planner: expected a list of plans");
  std::vector<Plan> plans;
  std::vector<std::string> keys;
  for (const json& item : *list) {
    Plan plan;
    if (item.is_string()) {
      plan.detail = trim(item.get<std::string>());
      plan.title = plan.detail.substr(0, std::min<size_t>(plan.detail.size(), 60));
    } else if (item.is_object()) {
      plan.title = text_member(item, {"title", "name"});
      plan.detail = text_member(item, {"detail", "description", "plan", "changes"});
      if (plan.title.empty())
        plan.title = plan.detail.substr(0, std::min<size_t>(60, plan.detail.size()));
    } else {
      continue;
    }
    if (plan.title.empty() && plan.detail.empty()) continue;
    std::string key = plan_key(plan.title);
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    keys.push_back(key);
    plans.push_back(std::move(plan));
  }
  if (plans.empty()) return make_error("planner: the answer held no usable plan");
  return plans;
}

Result<std::vector<Plan>> Planner::propose(const WorkContext& context, int count,
                                           AgentUsage& usage) {
  auto values = work_values(context);
  values["num_plans"] = std::to_string(count);
  values["kernel_format"] = caller_.prompts().kernel_format();
  values["tried_plans"] = context.tried_plans.empty() ? std::string("(none yet)")
                                                      : "- " + join(context.tried_plans, "\n- ");
  values["beam_summary"] =
      context.beam.empty() ? std::string("(only this kernel)") : "- " + join(context.beam, "\n- ");
  auto reply = caller_.ask("planner", "planner.txt", values, context.task.name, usage,
                           {context.temperature});
  if (!reply) return make_error(reply.error());
  auto plans = parse_plans(*reply);
  if (!plans) return plans;
  if (static_cast<int>(plans->size()) > count) plans->resize(static_cast<size_t>(count));
  return plans;
}

}  // namespace kopt::agents
