// The BM25 that ranks retrieval candidates: tokens as FTS5 makes them, and the properties of the
// score that the ranking relies on.
#include "memory_store/bm25.h"

#include <gtest/gtest.h>

namespace kopt::memory {
namespace {

TEST(Bm25Test, TokensAreLowerCasedRunsOfWordCharacters) {
  // Matched as FTS5 tokenizes pair_fts: each of these is a whole token of the text...
  const std::string text = "Warp __shfl_xor_sync, float4+x2 \xc3\xa4!";
  for (const char* token : {"warp", "__shfl_xor_sync", "float4", "x2", "\xc3\xa4"}) {
    EXPECT_GT(bm25_scores({token}, {text})[0], 0.0) << token;
  }
  // ...and these are not: parts of a token, two tokens with their separator, punctuation.
  for (const char* other : {"shfl", "float4+x2", "war", "!", ""}) {
    EXPECT_EQ(bm25_scores({other}, {text})[0], 0.0) << other;
  }
  EXPECT_EQ(bm25_scores({"warp"}, {" ,;- "})[0], 0.0);
}

TEST(Bm25Test, NoMatchScoresZeroAndMatchesScoreAboveZero) {
  auto scores = bm25_scores({"shfl"}, {"tree reduction", "warp shfl reduction", "SHFL"});
  EXPECT_EQ(scores[0], 0.0);
  EXPECT_GT(scores[1], 0.0);
  EXPECT_GT(scores[2], 0.0);  // case-insensitive, like FTS5
}

TEST(Bm25Test, RareTermsWeighMoreThanCommonOnes) {
  // "reduction" is in every document, "shfl" in one: matching the rare one is worth more.
  std::vector<std::string> docs = {"reduction shfl", "reduction tree", "reduction atomic",
                                   "reduction smem"};
  auto scores = bm25_scores({"reduction", "shfl"}, docs);
  for (size_t d = 1; d < docs.size(); ++d) EXPECT_GT(scores[0], scores[d]) << d;
  EXPECT_GT(scores[0] - scores[1], scores[1]);
}

TEST(Bm25Test, RepeatsSaturateAndLongDocumentsArePenalized) {
  auto scores = bm25_scores({"tile"}, {"tile", "tile tile tile tile tile tile tile tile",
                                       "tile a b c d e f g h i j k l m n o p"});
  EXPECT_GT(scores[1], scores[0]);
  EXPECT_LT(scores[1], 8 * scores[0]);  // eight repeats are worth far less than eight times one
  EXPECT_GT(scores[0], scores[2]);      // the same single match in a longer document
}

TEST(Bm25Test, TokensLongerThanAnyQueryTermStillCountTowardsLength) {
  std::string long_identifier(200, 'a');
  auto scores = bm25_scores({"tile"}, {"tile " + long_identifier, "tile b"});
  EXPECT_GT(scores[0], 0.0);
  EXPECT_DOUBLE_EQ(scores[0], scores[1]);  // both two tokens long
  EXPECT_TRUE(bm25_scores({}, {"tile"})[0] == 0.0);
  EXPECT_TRUE(bm25_scores({"tile"}, {}).empty());
}

}  // namespace
}  // namespace kopt::memory
