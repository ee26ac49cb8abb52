#include "src/cli/memory_cards.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/strings.h"
#include "common/text_escape.h"
#include "memory_store/technique_cards.h"
#include "sandbox/profile_bottleneck.h"

// A card's JSON (`kopt memory cards --json`) holds its fields under their own names.
namespace kopt::memory {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TechniqueCard, technique, pairs, bottlenecks, applies_when,
                                   pitfalls, plans, plans_verified, plans_failed, expected,
                                   measured)
}  // namespace kopt::memory

namespace kopt::cli {

namespace {

nlohmann::json card_json(const memory::TechniqueCard& card) {
  nlohmann::json j = card;
  j["expected_median"] = memory::median_of(card.expected);
  j["measured_median"] = memory::median_of(card.measured);
  return j;
}

}  // namespace

int memory_cards(memory::MemoryStore& store, const cxxopts::ParseResult& args) {
  memory::CardQuery query;
  if (args.count("task")) query.task = args["task"].as<std::string>();
  // The same classes the daemon's retrieval and prompts use (sandbox/profile_bottleneck.h).
  query.bottleneck_of_profile = [](const std::string& profile_json) {
    return bottleneck_of_profile_json(profile_json);
  };
  auto cards = memory::technique_cards(store.database(), query);
  if (!cards) {
    std::cerr << "kopt memory cards: " << cards.error() << "\n";
    return 1;
  }
  if (args.count("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& card : *cards) out.push_back(card_json(card));
    std::cout << dump_json_ascii(out, 2) << "\n";
    return 0;
  }
  if (cards->empty()) {
    std::printf("no technique seen in memory yet%s\n",
                query.task.empty() ? "" : (" for " + terminal_text(query.task)).c_str());
    return 0;
  }
  // Stored text (lessons, failure texts) reaches the terminal only through terminal_text, one
  // line at a time (it shows a newline as an escape).
  for (const auto& card : *cards) {
    for (const std::string& line : split(memory::describe_card(card), '\n')) {
      std::printf("%s\n", terminal_text(line).c_str());
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace kopt::cli
