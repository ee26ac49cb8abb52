#include "agents/summarizer.h"

#include <fmt/format.h>

#include <cctype>

#include "common/strings.h"
#include "common/utf8.h"
#include "llm/extract.h"

namespace kopt::agents {

using nlohmann::json;

namespace {

constexpr size_t kMaxLessonChars = 800;
constexpr size_t kMaxTags = 8;

// "Vectorized Loads" -> "vectorized-loads"; empty for a tag with no letters or digits.
std::string normalize_tag(const std::string& tag) {
  std::string out;
  for (char c : trim(tag)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

Result<Lesson> parse_lesson(const std::string& reply) {
  Lesson lesson;
  auto parsed = extract_json(reply);
  if (parsed && parsed->is_object()) {
    for (const char* key : {"lesson", "summary"}) {
      if (parsed->contains(key) && parsed->at(key).is_string()) {
        lesson.summary = trim(parsed->at(key).get<std::string>());
        break;
      }
    }
    if (parsed->contains("tags") && parsed->at("tags").is_array()) {
      for (const json& tag : parsed->at("tags")) {
        if (!tag.is_string()) continue;
        std::string t = normalize_tag(tag.get<std::string>());
        if (!t.empty() && lesson.tags.size() < kMaxTags &&
            std::find(lesson.tags.begin(), lesson.tags.end(), t) == lesson.tags.end()) {
          lesson.tags.push_back(t);
        }
      }
    }
  } else {
    lesson.summary = trim(reply);
  }
  if (lesson.summary.empty()) return make_error("summarizer: the answer held no lesson");
  // Cut on characters: a lesson cut inside one once made every later export of the memory fail.
  lesson.summary = clip_utf8(lesson.summary, kMaxLessonChars);
  return lesson;
}

Result<Lesson> Summarizer::summarize(const PairFacts& facts, AgentUsage& usage) {
  auto values = task_values(facts.task);
  values["slow_kernel"] = facts.before_source;
  values["fast_kernel"] = facts.after_source;
  values["slow_measurements"] = describe_measurements(facts.before);
  values["fast_measurements"] = describe_measurements(facts.after);
  values["slow_profile"] = describe_where_time_goes(facts.before);
  values["fast_profile"] = describe_where_time_goes(facts.after);
  values["speedup"] = fmt::format("{:.3f}x", facts.speedup);
  values["direction"] = facts.speedup >= 1 ? "faster" : "slower";
  values["diff"] = facts.diff.empty() ? std::string("(no line changed)") : facts.diff;
  auto reply = caller_.ask("summarizer", "summarizer.txt", values, facts.task.name, usage);
  if (!reply) return make_error(reply.error());
  return parse_lesson(*reply);
}

}  // namespace kopt::agents
