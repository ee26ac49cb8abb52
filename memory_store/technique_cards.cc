#include "memory_store/technique_cards.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/strings.h"
#include "common/utf8.h"
#include "memory_store/techniques.h"

namespace kopt::memory {

namespace {

// The planner reads cards at every call: the newest this many pairs and plans of the family are
// read, so the cost stays flat as the memory grows (older evidence is what curation keeps
// least of anyway).
constexpr int64_t kMaxCardPairs = 400;
constexpr int64_t kMaxCardPlans = 2000;

// Speedups of one technique on one task, for its "applies when" line.
struct TaskGains {
  std::string family;
  std::vector<double> speedups;
};

// The cards being built, by technique, with what a card is computed from.
struct CardBuilder {
  std::map<std::string, TechniqueCard> cards;
  std::map<std::string, std::map<std::string, TaskGains>> gains;  // technique -> task -> gains
  std::map<std::string, std::set<std::string>> pitfalls_seen;

  TechniqueCard& card(const std::string& technique) {
    TechniqueCard& c = cards[technique];
    c.technique = technique;
    return c;
  }
  void pitfall(const std::string& technique, const std::string& text, size_t max) {
    TechniqueCard& c = card(technique);
    if (c.pitfalls.size() < max && pitfalls_seen[technique].insert(text).second) {
      c.pitfalls.push_back(text);
    }
  }
};

std::string first_tag(const std::string& tags_json) {
  auto tags = nlohmann::json::parse(tags_json, nullptr, /*allow_exceptions=*/false);
  if (!tags.is_array() || tags.empty() || !tags[0].is_string()) return "";
  return tags[0].get<std::string>();
}

// The operation family of `task` as stored (its first tag); "" when unknown.
std::string family_of(sql::Database& db, const std::string& task) {
  if (task.empty()) return "";
  auto statement = db.cached("SELECT tags FROM tasks WHERE name = ?1");
  statement->bind(1, task);
  auto row = statement->step();
  return row && *row ? first_tag(statement->column_text(0)) : std::string();
}

// One pair's contribution: what it teaches (read from its kernels' code, as retrieval does), its
// speedup where it gained, its bottleneck before and after, or a pitfall where it lost.
void add_pair(CardBuilder& builder, const CardQuery& query, const sql::Statement& row) {
  const std::string task = row.column_text(0);
  const double speedup = row.column_double(2);
  const std::string summary = row.column_text(3);
  const bool negative = row.column_int64(4) != 0;
  if (row.column_int64(7) != 0) return;  // a tuner configuration teaches no technique
  for (const std::string& technique :
       pair_techniques_from_code(summary, row.column_text(5), row.column_text(6))) {
    if (negative) {
      builder.pitfall(
          technique,
          fmt::format("made {} slower ({:.2f}x): {}", task, speedup, first_line_clipped(summary)),
          query.max_pitfalls);
      continue;
    }
    TechniqueCard& card = builder.card(technique);
    ++card.pairs;
    card.measured.push_back(speedup);
    TaskGains& gains = builder.gains[technique][task];
    gains.family = first_tag(row.column_text(1));
    gains.speedups.push_back(speedup);
    if (!query.bottleneck_of_profile || row.column_is_null(8) || row.column_is_null(9)) continue;
    std::string before = query.bottleneck_of_profile(row.column_text(8));
    std::string after = query.bottleneck_of_profile(row.column_text(9));
    if (before.empty() || after.empty() || before == "unknown" || after == "unknown") continue;
    ++card.bottlenecks[before + " -> " + after];
  }
}

// The pairs a card learns from, with the newest profile of each side where one was taken
// (retrieval reads the slow side's the same way).
constexpr const char* kPairRows =
    "SELECT t.name, t.tags, p.speedup, p.summary, p.is_negative, sk.source, fk.source,"
    " fk.origin_tuner,"
    " (SELECT e.profile_json FROM evaluations e WHERE e.kernel_id = p.slow_kernel_id"
    "  AND e.profile_json != '{}' ORDER BY e.id DESC LIMIT 1),"
    " (SELECT e.profile_json FROM evaluations e WHERE e.kernel_id = p.fast_kernel_id"
    "  AND e.profile_json != '{}' ORDER BY e.id DESC LIMIT 1)"
    " FROM pairs p JOIN tasks t ON t.id = p.task_id"
    " JOIN kernels sk ON sk.id = p.slow_kernel_id JOIN kernels fk ON fk.id = p.fast_kernel_id"
    " WHERE ?1 = '' OR t.name = ?1 OR (?2 != '' AND p.family = ?2) ORDER BY p.id DESC LIMIT ?3";

// The plans a card learns from, newest first.
constexpr const char* kPlanRows =
    "SELECT p.technique, p.outcome, p.detail, t.name FROM plans p"
    " JOIN tasks t ON t.id = p.task_id"
    " WHERE ?1 = '' OR t.name = ?1 OR (?2 != '' AND json_valid(t.tags)"
    "  AND json_extract(t.tags, '$[0]') = ?2) ORDER BY p.id DESC LIMIT ?3";

// Hands each row of `sql` (parameters: ?1 the task or '', ?2 the family or '', ?3 the row limit)
// to `add`.
template <typename Add>
Status read_rows(sql::Database& db, const char* sql, const CardQuery& query,
                 const std::string& family, int64_t limit, CardBuilder& builder, Add add) {
  auto statement = db.cached(sql);
  statement->bind_all(query.task, family, limit);
  auto s = statement->each_row([&](const sql::Statement& row) { add(builder, query, row); });
  if (!s) return make_error("technique cards: " + s.error());
  return s;
}

// One plan's contribution: counted for each technique it names; a verified one's speedup over
// its parent is a measured gain, a failed one's outcome a pitfall; its stated expectation kept.
void add_plan(CardBuilder& builder, const CardQuery& query, const sql::Statement& row) {
  const std::string outcome = row.column_text(1);
  if (outcome == "queued") return;  // not developed (yet): neither a success nor a failure
  const double expected = expected_speedup_in(row.column_text(2));
  static const std::regex kVerified(R"(^verified, ([0-9]+(?:\.[0-9]+)?)x)");
  std::smatch match;
  const bool verified = std::regex_search(outcome, match, kVerified);
  for (const std::string& technique : split(row.column_text(0), ' ')) {
    if (technique.empty()) continue;
    TechniqueCard& card = builder.card(technique);
    ++card.plans;
    if (expected > 0) card.expected.push_back(expected);
    if (verified) {
      ++card.plans_verified;
      card.measured.push_back(std::stod(match[1].str()));
    } else {
      ++card.plans_failed;
      builder.pitfall(technique, row.column_text(3) + ": " + first_line_clipped(outcome),
                      query.max_pitfalls);
    }
  }
}

// "softmax (reduction): best 1.52x, median 1.30x over 3 pairs", the task where it gained most
// first.
std::vector<std::string> applies_when(const std::map<std::string, TaskGains>& by_task, size_t max) {
  std::vector<std::pair<double, std::string>> lines;
  for (const auto& [task, gains] : by_task) {
    double best = *std::max_element(gains.speedups.begin(), gains.speedups.end());
    lines.emplace_back(best, fmt::format("{}{}: best {:.2f}x, median {:.2f}x over {} pair{}", task,
                                         gains.family.empty() ? "" : " (" + gains.family + ")",
                                         best, median_of(gains.speedups), gains.speedups.size(),
                                         gains.speedups.size() == 1 ? "" : "s"));
  }
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size() && i < max; ++i) out.push_back(lines[i].second);
  return out;
}

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double expected_speedup_in(const std::string& text) {
  // "expected 1.3x", "expect about 1.25x", "expected speedup: 2x"; the first one stated.
  static const std::regex kExpected(R"(expect(?:ed|s)?\b[^.\n0-9]{0,30}([0-9]+(?:\.[0-9]+)?)\s*x)",
                                    std::regex::icase);
  std::smatch match;
  if (!std::regex_search(text, match, kExpected)) return 0;
  double value = std::stod(match[1].str());
  return value > 0 && value < 1000 ? value : 0;
}

Result<std::vector<TechniqueCard>> technique_cards(sql::Database& db, const CardQuery& query) {
  const std::string family = family_of(db, query.task);
  CardBuilder builder;
  if (auto s = read_rows(db, kPairRows, query, family, kMaxCardPairs, builder, add_pair); !s)
    return make_error(s.error());
  if (auto s = read_rows(db, kPlanRows, query, family, kMaxCardPlans, builder, add_plan); !s)
    return make_error(s.error());
  std::vector<TechniqueCard> cards;
  for (auto& [technique, card] : builder.cards) {
    card.applies_when = applies_when(builder.gains[technique], query.max_applies);
    cards.push_back(std::move(card));
  }
  std::stable_sort(cards.begin(), cards.end(), [](const auto& a, const auto& b) {
    return a.evidence() > b.evidence();  // map order breaks ties by name
  });
  return cards;
}

std::string describe_card(const TechniqueCard& card) {
  std::string text =
      fmt::format("{}: {} pair{} taught it; {} plan{} named it ({} verified, {} failed)",
                  card.technique, card.pairs, card.pairs == 1 ? "" : "s", card.plans,
                  card.plans == 1 ? "" : "s", card.plans_verified, card.plans_failed);
  if (!card.bottlenecks.empty()) {
    std::vector<std::string> moves;
    for (const auto& [move, n] : card.bottlenecks) moves.push_back(fmt::format("{} ({})", move, n));
    text += "\n  bottleneck before -> after: " + join(moves, "; ");
  }
  if (!card.applies_when.empty()) text += "\n  applies when: " + join(card.applies_when, "; ");
  if (!card.pitfalls.empty()) text += "\n  pitfalls: " + join(card.pitfalls, "; ");
  text += fmt::format(
      "\n  gain: expected {}, measured {}",
      card.expected.empty() ? std::string("not stated")
                            : fmt::format("median {:.2f}x ({} plans)", median_of(card.expected),
                                          card.expected.size()),
      card.measured.empty()
          ? std::string("none yet")
          : fmt::format("median {:.2f}x ({})", median_of(card.measured), card.measured.size()));
  return text;
}

}  // namespace kopt::memory
