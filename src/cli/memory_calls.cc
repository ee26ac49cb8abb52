#include "src/cli/memory_calls.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/text_escape.h"
#include "memory_store/plan_store.h"

namespace kopt::cli {

namespace {

// Model text reaches a terminal: control characters other than newline and tab, C1 controls
// and bidi overrides are shown as visible escapes (common/text_escape.h) so an answer cannot
// move the cursor, retitle the window, write the clipboard or reorder what is shown.
std::string printable(const std::string& text) { return terminal_block_text(text); }

nlohmann::json to_json(const memory::TranscriptRecord& t, bool texts) {
  nlohmann::json j = {{"id", t.id},
                      {"run_id", t.run_id ? nlohmann::json(*t.run_id) : nlohmann::json()},
                      {"agent", t.agent},
                      {"task", t.task},
                      {"template", t.template_file},
                      {"status", t.status},
                      {"cut", t.cut},
                      {"created_at", t.created_at},
                      {"prompt_chars", t.prompt_chars},
                      {"answer_chars", t.answer_chars}};
  if (texts) {
    j["system"] = t.system;
    j["prompt"] = t.prompt;
    j["answer"] = t.answer;
  }
  return j;
}

}  // namespace

int memory_calls(memory::MemoryStore& store, const cxxopts::ParseResult& args) {
  auto calls = memory::list_transcripts(store.database(), std::nullopt, args["limit"].as<int64_t>(),
                                        args.count("task") ? args["task"].as<std::string>() : "");
  if (!calls) {
    std::cerr << "kopt memory calls: " << calls.error() << "\n";
    return 1;
  }
  if (args.count("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : *calls) out.push_back(to_json(t, false));
    std::cout << dump_json_ascii(out, 2) << "\n";
    return 0;
  }
  if (calls->empty()) {
    std::printf("no stored calls (daemon.keep_prompts keeps them; on by default)\n");
    return 0;
  }
  std::printf("%-7s %-5s %-11s %-18s %-13s %9s %9s  %s\n", "id", "run", "agent", "task", "template",
              "prompt", "answer", "status");
  for (const auto& t : *calls) {
    std::printf("%-7lld %-5s %-11s %-18s %-13s %9lld %9lld  %s%s\n", static_cast<long long>(t.id),
                t.run_id ? std::to_string(*t.run_id).c_str() : "-", printable(t.agent).c_str(),
                printable(t.task).c_str(), printable(t.template_file).c_str(),
                static_cast<long long>(t.prompt_chars), static_cast<long long>(t.answer_chars),
                printable(t.status).c_str(), t.cut ? " (cut)" : "");
  }
  return 0;
}

int memory_call(memory::MemoryStore& store, const std::vector<std::string>& words,
                const cxxopts::ParseResult& args) {
  if (words.size() != 1 || words[0].empty() || words[0].size() > 18 ||
      words[0].find_first_not_of("0123456789") != std::string::npos) {
    std::cerr << "kopt memory call: expected one call ID (a number; see kopt memory calls)\n";
    return 2;
  }
  int64_t id = std::stoll(words[0]);
  auto call = memory::transcript(store.database(), id);
  if (!call) {
    std::cerr << "kopt memory call: " << call.error() << "\n";
    return 1;
  }
  if (!*call) {
    std::cerr << "kopt memory call: no call " << id << " in " << store.database().path().string()
              << "\n";
    return 1;
  }
  const memory::TranscriptRecord& t = **call;
  if (args.count("json")) {
    std::cout << dump_json(to_json(t, true), 2) << "\n";
    return 0;
  }
  std::printf("call %lld: %s for %s (%s), %s, %s%s\n\n", static_cast<long long>(t.id),
              printable(t.agent).c_str(), printable(t.task).c_str(),
              printable(t.template_file).c_str(), printable(t.status).c_str(),
              printable(t.created_at).c_str(), t.cut ? " (texts cut to their start and end)" : "");
  std::cout << "===== system =====\n"
            << printable(t.system) << "\n===== prompt =====\n"
            << printable(t.prompt) << "\n===== answer =====\n"
            << printable(t.answer) << "\n";
  return 0;
}

}  // namespace kopt::cli
