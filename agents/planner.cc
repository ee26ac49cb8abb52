#include "agents/planner.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "common/strings.h"
#include "common/utf8.h"
#include "llm/extract.h"

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

// A planner is asked for a handful of plans; a longer list is a hostile or broken answer, and
// only its start is read (the caller keeps `count` of them anyway).
constexpr size_t kMaxPlansRead = 64;
// A title is a line in a table; the detail is what the coder reads.
constexpr size_t kMaxTitleBytes = 60;
constexpr size_t kMaxDetailBytes = 4000;

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
  // A set, not a list searched per plan: 60,000 one-word plans once cost 34 s here.
  std::unordered_set<std::string> keys;
  size_t read = 0;
  for (const json& item : *list) {
    if (++read > kMaxPlansRead) break;
    Plan plan;
    if (item.is_string()) {
      plan.detail = trim(item.get<std::string>());
    } else if (item.is_object()) {
      plan.title = text_member(item, {"title", "name"});
      plan.detail = text_member(item, {"detail", "description", "plan", "changes"});
    } else {
      continue;
    }
    // Cut on characters: a title cut inside a character once made json::dump throw.
    plan.title = clip_utf8(plan.title.empty() ? plan.detail : plan.title, kMaxTitleBytes, "");
    plan.detail = clip_utf8(plan.detail, kMaxDetailBytes);
    if (plan.title.empty() && plan.detail.empty()) continue;
    if (!keys.insert(plan_key(plan.title)).second) continue;
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
  values["technique_cards"] = context.technique_cards.empty()
                                  ? std::string("(no technique seen in memory yet)")
                                  : join(context.technique_cards, "\n\n");
  values["tuner_facts"] = context.tuner_facts.empty() ? std::string("(nothing swept yet)")
                                                      : "- " + join(context.tuner_facts, "\n- ");
  auto reply = caller_.ask("planner", "planner.txt", values, context.task.name, usage,
                           {context.temperature});
  if (!reply) return make_error(reply.error());
  auto plans = parse_plans(*reply);
  if (!plans) return plans;
  if (static_cast<int>(plans->size()) > count) plans->resize(static_cast<size_t>(count));
  return plans;
}

}  // namespace kopt::agents
