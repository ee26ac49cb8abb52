// Retrieval for prompts (ranked, diverse, deterministic) and the plain word search of
// `kopt memory search`. The ranking is described in retrieval.h.
#include "memory_store/retrieval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "memory_store/bm25.h"
#include "memory_store/memory_store.h"
#include "memory_store/production_baselines.h"
#include "memory_store/row_readers.h"
#include "memory_store/source_identifiers.h"
#include "memory_store/techniques.h"

namespace kopt::memory {

namespace {

// Candidate counts. Enough that the ranking has real choices, small enough that 100,000 pairs
// stay well under 10 ms (bench/retrieval_bench.cc).
// The task's own pairs are always candidates, even when their words match poorly.
constexpr int64_t kTaskCandidates = 50;
// The newest pairs tagged with the query's operation family.
constexpr int64_t kFamilyCandidates = 100;
// The newest pairs that share any word with the query (other families with similar code).
constexpr int64_t kTextCandidates = 100;
// Identifiers of the current kernel in the candidate query (the longest), and in BM25.
constexpr size_t kProbeTerms = 12;
constexpr size_t kMaxSourceTerms = 48;
// The absolute part of text relevance: a candidate's share of the query's distinct words. At
// kFullCoverage or more its relative BM25 counts whole; below, in proportion, so the best of
// poor matches no longer gets a full 1.0. A pair of another task and family with less than
// kMinCoverage is not relevant at all and is never shown.
constexpr double kFullCoverage = 0.4;
constexpr double kMinCoverage = 0.2;

bool contains(const std::vector<std::string>& tags, const std::string& tag) {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

// "sm_90a" -> "90", "9.0" -> "90", "compute_86" -> "86".
std::string arch_digits(const std::string& arch) {
  std::string digits;
  for (char c : arch) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  return digits;
}

// "" and "unknown" both say "no profile".
bool known_bottleneck(const std::string& name) { return !name.empty() && name != "unknown"; }

}  // namespace

std::string example_key(const RetrievedPair& candidate) {
  std::string key = candidate.pair.task + (candidate.pair.is_negative ? "|warning|" : "|");
  // A pair that names no technique cannot be told apart by what it teaches: its lineage (a
  // branch of successive improvements) stands in for it.
  if (candidate.techniques.empty())
    return key + "lineage " + std::to_string(candidate.pair.lineage_root_id);
  for (const auto& technique : candidate.techniques) key += technique + ",";
  return key;
}

double arch_similarity(const std::string& a, const std::string& b) {
  std::string da = arch_digits(a), db = arch_digits(b);
  if (da.size() < 2 || db.size() < 2) return 0;
  if (da == db) return 1;
  return da.substr(0, da.size() - 1) == db.substr(0, db.size() - 1) ? 0.5 : 0;
}

bool same_bottleneck(const std::string& a, const std::string& b) {
  return known_bottleneck(a) && a == b;
}

double non_text_score(const RetrievalQuery& query, const PairRecord& pair,
                      const std::string& slow_bottleneck,
                      const std::vector<std::string>& techniques, bool reached_production) {
  double family = 0;
  if (!query.family_tags.empty()) {
    if (contains(pair.tags, query.family_tags.front())) family += 0.5;
    size_t others = query.family_tags.size() - 1, shared = 0;
    for (size_t i = 1; i < query.family_tags.size(); ++i) {
      if (contains(pair.tags, query.family_tags[i])) ++shared;
    }
    if (others > 0) family += 0.5 * static_cast<double>(shared) / static_cast<double>(others);
  }
  double same_task = !query.task.empty() && pair.task == query.task ? 1 : 0;
  double gpu = arch_similarity(query.gpu_arch, pair.gpu_arch);
  double speed = pair.speedup > 0 ? std::min(std::fabs(std::log2(pair.speedup)) / 3.0, 1.0) : 0;
  double useful = (static_cast<double>(pair.improved_count) + 1.0) /
                  (static_cast<double>(pair.retrieved_count) + 2.0);
  double bottleneck = same_bottleneck(query.bottleneck, slow_bottleneck) ? 1 : 0;
  double novelty = 0;
  if (!techniques.empty() && !(techniques.size() == 1 && techniques.front() == "tuning")) {
    novelty = -1;
    for (const auto& t : techniques) {
      if (!contains(query.current_techniques, t)) novelty = 1;
    }
  }
  double production = reached_production ? 1 : 0;
  return 0.6 * family + 0.4 * same_task + 0.3 * gpu + 0.3 * speed + 0.5 * (useful - 0.5) +
         0.4 * bottleneck + 0.3 * novelty + 0.3 * production;
}

std::vector<RetrievedPair> select_diverse(
    std::vector<RetrievedPair> candidates, int k, const RetrievalQuery& query,
    const std::function<std::string(int64_t kernel_id)>& source_of) {
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.pair.id < b.pair.id;
  });
  const int max_negatives = std::max(1, k / 3);
  int negatives = 0, tuner = 0;
  std::set<std::string> shown;  // example_key of every chosen pair
  std::set<std::string> taught;
  std::vector<RetrievedPair> chosen;
  std::vector<bool> taken(candidates.size(), false);
  std::map<size_t, bool> near_copies;  // asked once per candidate
  auto is_near_copy = [&](size_t i) {
    if (!query.near_copy || !source_of) return false;
    auto [it, fresh] = near_copies.try_emplace(i, false);
    if (fresh) it->second = query.near_copy(source_of(candidates[i].pair.fast_kernel_id));
    return it->second;
  };
  // Two passes: the first takes only pairs that teach something no chosen pair teaches yet
  // (or name no technique at all), the second fills what is left by score.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (static_cast<int>(chosen.size()) >= k) break;
      RetrievedPair& candidate = candidates[i];
      const PairRecord& pair = candidate.pair;
      if (taken[i] || query.exclude_kernels.count(pair.fast_kernel_id)) continue;
      if (pair.is_negative && negatives >= max_negatives) continue;
      if (candidate.tuner_only && tuner >= query.max_tuner_pairs) continue;
      if (shown.count(example_key(candidate))) continue;
      if (pass == 0 && !candidate.techniques.empty() &&
          std::all_of(candidate.techniques.begin(), candidate.techniques.end(),
                      [&](const std::string& t) { return taught.count(t) > 0; })) {
        continue;
      }
      if (is_near_copy(i)) continue;
      shown.insert(example_key(candidate));
      if (pair.is_negative) ++negatives;
      if (candidate.tuner_only) ++tuner;
      taught.insert(candidate.techniques.begin(), candidate.techniques.end());
      taken[i] = true;
      chosen.push_back(candidate);
    }
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.pair.id < b.pair.id;
  });
  return chosen;
}

void draw_example_slot(std::vector<RetrievedPair>& chosen, std::vector<RetrievedPair> candidates,
                       int k, const RetrievalQuery& query,
                       const std::function<std::string(int64_t kernel_id)>& source_of) {
  if (!query.draw_index || k <= 0) return;
  // The slot: the last positive example when the prompt is full, else a new one at the end.
  size_t slot = chosen.size();
  if (static_cast<int>(chosen.size()) >= k) {
    auto last = std::find_if(chosen.rbegin(), chosen.rend(),
                             [](const RetrievedPair& p) { return !p.pair.is_negative; });
    if (last == chosen.rend()) return;  // only warnings: no example slot to randomise
    slot = static_cast<size_t>(std::distance(chosen.begin(), last.base()) - 1);
  }
  std::set<int64_t> others;  // what the other slots show
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (i != slot) others.insert(chosen[i].pair.id);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.score != b.score ? a.score > b.score : a.pair.id < b.pair.id;
  });
  std::vector<RetrievedPair> pool;
  for (RetrievedPair& candidate : candidates) {
    if (pool.size() >= kMaxDrawCandidates) break;
    const PairRecord& pair = candidate.pair;
    if (pair.is_negative || candidate.tuner_only || others.count(pair.id) ||
        query.exclude_kernels.count(pair.fast_kernel_id)) {
      continue;
    }
    if (query.near_copy && source_of && query.near_copy(source_of(pair.fast_kernel_id))) continue;
    pool.push_back(std::move(candidate));
  }
  if (pool.empty()) return;
  size_t drawn = std::min(query.draw_index(pool.size()), pool.size() - 1);
  RetrievedPair pick = std::move(pool[drawn]);
  pick.propensity = 1.0 / static_cast<double>(pool.size());
  pick.draw_candidates = static_cast<int64_t>(pool.size());
  if (slot == chosen.size()) {
    chosen.push_back(std::move(pick));
  } else {
    chosen[slot] = std::move(pick);
  }
}

namespace {

// The query's words: the task's and the family tags' words (`topic`), the kernel's identifiers
// (`terms`), and both lower-cased, sorted and unique (`all`, what BM25 compares).
struct QueryWords {
  std::vector<std::string> topic, terms, all;
};

QueryWords query_words(const RetrievalQuery& query) {
  QueryWords w;
  w.topic = text_words(query.task);
  for (const auto& tag : query.family_tags) {
    for (auto& word : text_words(tag)) w.topic.push_back(std::move(word));
  }
  w.terms = index_terms(query.kernel_source);
  if (w.terms.size() > kMaxSourceTerms) w.terms.resize(kMaxSourceTerms);
  w.all = w.topic;
  w.all.insert(w.all.end(), w.terms.begin(), w.terms.end());
  // BM25 compares lower-cased tokens (FTS5 matching is case-insensitive).
  for (auto& word : w.all) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  std::sort(w.all.begin(), w.all.end());
  w.all.erase(std::unique(w.all.begin(), w.all.end()), w.all.end());
  return w;
}

// Candidates, each source a LIMITed read in index order so that its cost does not grow with
// the memory: the task's own pairs (strongest first), the newest pairs of the operation family,
// the newest pairs matching any word of the query. Returned as a JSON array of ids (json_each).
Result<std::string> candidate_ids(sql::Database& db, const RetrievalQuery& query,
                                  const QueryWords& words) {
  std::set<int64_t> ids;
  auto collect = [&](sql::CachedStatement& statement) -> Status {
    auto s =
        statement->each_row([&](const sql::Statement& row) { ids.insert(row.column_int64(0)); });
    if (!s) return make_error("retrieval: " + s.error());
    return s;
  };
  {
    auto statement = db.cached(
        "SELECT p.id FROM pairs p JOIN tasks t ON t.id = p.task_id WHERE t.name = ?1"
        " ORDER BY max(p.speedup, 1.0 / p.speedup) DESC, p.id LIMIT ?2");
    statement->bind(1, query.task).bind(2, kTaskCandidates);
    if (auto s = collect(statement); !s) return make_error(s.error());
  }
  if (!query.family_tags.empty()) {
    if (std::string family = fts_any_of(text_words(query.family_tags.front())); !family.empty()) {
      auto statement = db.cached(
          "SELECT rowid FROM pair_fts WHERE pair_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2");
      statement->bind(1, "{tags} : (" + family + ")").bind(2, kFamilyCandidates);
      if (auto s = collect(statement); !s) return make_error(s.error());
    }
  }
  // The OR query opens one doclist per word: the task and family words and only the longest
  // (most specific) identifiers of the kernel keep it cheap; BM25 still uses them all.
  std::vector<std::string> probe = words.topic;
  std::vector<std::string> longest = words.terms;
  std::stable_sort(longest.begin(), longest.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  if (longest.size() > kProbeTerms) longest.resize(kProbeTerms);
  probe.insert(probe.end(), longest.begin(), longest.end());
  if (std::string any = fts_any_of(probe); !any.empty()) {
    auto statement = db.cached(
        "SELECT rowid FROM pair_fts WHERE pair_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2");
    statement->bind(1, any).bind(2, kTextCandidates);
    if (auto s = collect(statement); !s) return make_error(s.error());
  }
  return nlohmann::json(std::vector<int64_t>(ids.begin(), ids.end())).dump();
}

// How well a candidate's text matches the query: BM25 relative to the best candidate, damped
// by its absolute share of the query's words (kFullCoverage).
struct TextMatch {
  double score = 0;     // 0..1
  double coverage = 0;  // share of the query's distinct words the candidate contains
};

// BM25 of every candidate over what pair_fts holds for it, scaled so the best is 1, times its
// coverage's weight. The slow kernel's identifiers count: a pair whose "before" looks like the
// current kernel is the one whose change applies.
Result<std::map<int64_t, TextMatch>> text_relevance(sql::Database& db, const std::string& id_list,
                                                    const std::vector<std::string>& words) {
  std::vector<int64_t> doc_ids;
  std::vector<std::string> documents;
  auto statement = db.cached(
      "SELECT f.rowid,"
      " f.summary || ' ' || f.tags || ' ' || f.task || ' ' || f.slow_terms || ' ' || f.fast_terms"
      " FROM json_each(?1) j JOIN pair_fts f ON f.rowid = j.value");
  auto read = statement->bind(1, id_list).each_row([&](const sql::Statement& row) {
    doc_ids.push_back(row.column_int64(0));
    documents.push_back(row.column_text(1));
  });
  if (!read) return make_error("retrieval: " + read.error());
  std::vector<double> coverage;
  std::vector<double> scores = bm25_scores(words, documents, &coverage);
  double best = 0;
  for (double score : scores) best = std::max(best, score);
  std::map<int64_t, TextMatch> text;  // pair id -> relevance
  for (size_t i = 0; i < doc_ids.size(); ++i) {
    double weight = std::min(1.0, coverage[i] / kFullCoverage);
    text[doc_ids[i]] = {best > 0 ? weight * scores[i] / best : 0, coverage[i]};
  }
  return text;
}

// The candidates' rows scored: text relevance plus the non-text score (GPU, bottleneck,
// techniques, production). The slow kernel's newest profile comes with each candidate (one
// indexed look-up in the same statement), only when the query has a class to match it to.
// Whether a candidate is worth showing at all: the query's own task or operation family, or
// enough of the query's words (an absolute threshold: the best of unrelated pairs is not shown).
bool relevant(const RetrievalQuery& query, const PairRecord& pair, const TextMatch& match) {
  if (!query.task.empty() && pair.task == query.task) return true;
  if (!query.family_tags.empty() && contains(pair.tags, query.family_tags.front())) return true;
  return match.coverage >= kMinCoverage;
}

Result<std::vector<RetrievedPair>> scored_candidates(sql::Database& db, const RetrievalQuery& query,
                                                     const std::string& id_list,
                                                     const std::map<int64_t, TextMatch>& text) {
  const bool match_bottleneck = query.bottleneck_of_profile && known_bottleneck(query.bottleneck);
  std::map<int64_t, std::string> slow_classes;  // slow kernel id -> class: lineages share them
  // (task, GPU model) -> its best production baseline: candidates share a few of them.
  std::map<std::pair<std::string, std::string>, std::optional<ProductionBaselineRecord>>
      productions;
  auto production_of =
      [&](const PairRecord& pair) -> const std::optional<ProductionBaselineRecord>& {
    auto [known, fresh] = productions.try_emplace({pair.task, pair.gpu_model});
    if (fresh) {
      auto best = best_production_baseline(db, pair.task, pair.gpu_model);
      if (best) known->second = *best;  // a failed look-up counts as "none measured"
    }
    return known->second;
  };
  std::vector<RetrievedPair> candidates;
  auto statement = db.cached(std::string("SELECT ") + rows::kPairColumns +
                             ", CASE WHEN ?3 THEN (SELECT e.profile_json FROM evaluations e"
                             " WHERE e.kernel_id = p.slow_kernel_id AND e.profile_json != '{}'"
                             " ORDER BY e.id DESC LIMIT 1) END,"
                             " f.slow_terms, f.fast_terms, fk.origin_tuner,"
                             " (SELECT e.median_us FROM evaluations e"
                             " WHERE e.kernel_id = p.fast_kernel_id"
                             " AND e.gpu_model = p.gpu_model AND e.verdict = 'ok'"
                             " AND e.median_us > 0"
                             " ORDER BY e.id DESC LIMIT 1), sk.source, fk.source"
                             " FROM json_each(?1) j JOIN pairs p ON p.id = j.value"
                             " JOIN tasks t ON t.id = p.task_id"
                             " JOIN kernels fk ON fk.id = p.fast_kernel_id"
                             " JOIN kernels sk ON sk.id = p.slow_kernel_id"
                             " LEFT JOIN pair_fts f ON f.rowid = p.id"
                             " WHERE (?2 OR p.is_negative = 0)");
  statement->bind_all(id_list, query.include_negatives, match_bottleneck);
  while (true) {
    auto row = statement->step();
    if (!row) return make_error("retrieval: " + row.error());
    if (!*row) break;
    RetrievedPair candidate;
    candidate.pair = rows::read_pair(*statement);
    if (match_bottleneck) {
      auto [known, fresh] = slow_classes.try_emplace(candidate.pair.slow_kernel_id);
      if (fresh) {
        std::string profile = statement->column_text(rows::kPairColumnCount);
        known->second = profile.empty() ? "unknown" : query.bottleneck_of_profile(profile);
      }
      candidate.slow_bottleneck = known->second;
    }
    const int extra = rows::kPairColumnCount;
    candidate.tuner_only = statement->column_int64(extra + 3) != 0;
    candidate.techniques =
        candidate.tuner_only
            ? std::vector<std::string>{"tuning"}
            // What the fast kernel's code adds, comments stripped: a comment "no tensor
            // cores" or a word of the lesson's prose is not a technique of the code.
            : pair_techniques_from_code(candidate.pair.summary, statement->column_text(extra + 5),
                                        statement->column_text(extra + 6));
    candidate.fast_us = statement->column_double(extra + 4);
    if (const auto& production = production_of(candidate.pair)) {
      candidate.production_name = production->name;
      candidate.production_us = production->median_us;
    }
    auto it = text.find(candidate.pair.id);
    TextMatch match = it != text.end() ? it->second : TextMatch{};
    if (!relevant(query, candidate.pair, match)) continue;
    candidate.text_score = match.score;
    candidate.text_coverage = match.coverage;
    candidate.score =
        candidate.text_score + non_text_score(query, candidate.pair, candidate.slow_bottleneck,
                                              candidate.techniques, candidate.reached_production());
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

// The current kernel and its ancestors, whose pairs are left out: they show the model where it
// already is.
Status exclude_lineage(sql::Database& db, int64_t kernel_id, RetrievalQuery& rules) {
  if (kernel_id <= 0) return ok_status();
  auto statement = db.cached(
      "WITH RECURSIVE lineage(id) AS (SELECT ?1 UNION"
      " SELECT k.parent_id FROM kernels k JOIN lineage l ON k.id = l.id"
      " WHERE k.parent_id IS NOT NULL) SELECT id FROM lineage LIMIT 10000");
  auto s = statement->bind(1, kernel_id).each_row([&](const sql::Statement& row) {
    rules.exclude_kernels.insert(row.column_int64(0));
  });
  if (!s) return make_error("retrieval: " + s.error());
  return s;
}

}  // namespace

Result<std::vector<RetrievedPair>> MemoryStore::retrieve(const RetrievalQuery& query) {
  if (query.k <= 0) return std::vector<RetrievedPair>();
  const QueryWords words = query_words(query);
  auto id_list = candidate_ids(db_, query, words);
  if (!id_list) return make_error(id_list.error());
  auto text = text_relevance(db_, *id_list, words.all);
  if (!text) return make_error(text.error());
  auto candidates = scored_candidates(db_, query, *id_list, *text);
  if (!candidates) return make_error(candidates.error());
  RetrievalQuery rules = query;
  if (auto s = exclude_lineage(db_, query.current_kernel_id, rules); !s)
    return make_error(s.error());
  auto source_of = [this](int64_t kernel_id) {
    auto statement = db_.cached("SELECT source FROM kernels WHERE id = ?1");
    statement->bind(1, kernel_id);
    auto row = statement->step();
    return row && *row ? statement->column_text(0) : std::string();
  };
  std::vector<RetrievedPair> chosen = select_diverse(*candidates, query.k, rules, source_of);
  draw_example_slot(chosen, std::move(*candidates), query.k, rules, source_of);
  return chosen;
}

Result<std::vector<SearchHit>> MemoryStore::search(const std::string& query, int64_t limit) {
  std::vector<SearchHit> hits;
  std::string match = fts_all_of(text_words(query));
  if (match.empty()) return hits;
  {
    auto statement = db_.cached(
        "SELECT p.id, t.name, p.summary, p.speedup FROM pair_fts f"
        " JOIN pairs p ON p.id = f.rowid JOIN tasks t ON t.id = p.task_id"
        " WHERE pair_fts MATCH ?1 ORDER BY f.rank, p.id LIMIT ?2");
    auto s = statement->bind(1, match).bind(2, limit).each_row([&](const sql::Statement& row) {
      hits.push_back({"pair", row.column_int64(0), row.column_text(1), row.column_text(2),
                      row.column_double(3)});
    });
    if (!s) return make_error("search: " + s.error());
  }
  auto statement = db_.cached(
      "SELECT k.id, t.name, k.sha256, k.origin_agent, k.origin_model, k.origin_tuner"
      " FROM kernel_fts f JOIN kernels k ON k.id = f.rowid JOIN tasks t ON t.id = k.task_id"
      " WHERE kernel_fts MATCH ?1 ORDER BY f.rank, k.id LIMIT ?2");
  auto s = statement->bind(1, match).bind(2, limit).each_row([&](const sql::Statement& row) {
    std::string origin = row.column_int64(5) ? "tuner" : row.column_text(3);
    if (!row.column_text(4).empty()) origin += " (" + row.column_text(4) + ")";
    hits.push_back({"kernel", row.column_int64(0), row.column_text(1),
                    row.column_text(2).substr(0, 12) + "  " + origin, 0});
  });
  if (!s) return make_error("search: " + s.error());
  return hits;
}

}  // namespace kopt::memory
