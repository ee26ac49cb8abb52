// CPU half of the memory defences (issue 32): the keyed mask over the reference's kept outputs,
// the guard pattern, the scratch fill and the timed poisons, all pure functions. Their GPU half
// is in adversarial/ (stashes_in_granule, overreads_both_inputs, scan_trusts_scratch_fill,
// skips_finished_outputs and their twins).
#include "sandbox/worker/memory_patterns.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>

#include "sandbox/worker/buffers.h"
#include "sandbox/worker/keyed_mask.h"

namespace kopt::worker {
namespace {

MaskKey reference_key() {  // bytes 00..0f, little-endian, as in the SipHash paper
  return {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
}

TEST(KeyedMask, SipHashMatchesThePublishedVectors) {
  unsigned char message[15];
  for (int i = 0; i < 15; ++i) message[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(siphash24(reference_key(), message, 0), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(siphash24(reference_key(), message, 15), 0xa129ca6149be45e5ULL);
}

TEST(KeyedMask, AWordIsTheHashOfItsEightLittleEndianBytes) {
  for (uint64_t w : {0ULL, 1ULL, 0x0706050403020100ULL, ~0ULL, 123456789ULL}) {
    unsigned char bytes[8];
    for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(w >> (8 * b));
    EXPECT_EQ(sip_word(reference_key(), w), siphash24(reference_key(), bytes, 8)) << w;
  }
}

TEST(KeyedMask, SmallElementsShareAWordInMemoryOrder) {
  MaskKey key{42, 4242};
  uint64_t w0 = sip_word(key, 0), w1 = sip_word(key, 1);
  EXPECT_EQ(uint32_t(mask_bits(key, 0, 4)), uint32_t(w0));
  EXPECT_EQ(uint32_t(mask_bits(key, 1, 4)), uint32_t(w0 >> 32));
  EXPECT_EQ(uint32_t(mask_bits(key, 2, 4)), uint32_t(w1));
  EXPECT_EQ(uint16_t(mask_bits(key, 3, 2)), uint16_t(w0 >> 48));
  EXPECT_EQ(uint8_t(mask_bits(key, 9, 1)), uint8_t(w1 >> 8));
  EXPECT_EQ(mask_bits(key, 5, 8), sip_word(key, 5));
}

// What made the old mask weak: it was mix64(key ^ mix64(i)) with an invertible mix64, so one
// element's full mask word gives the key, and the key every other element. An attacker knowing a
// 4-byte element's true value has its low 32 bits and searched the high 32 (2^32 tries; given
// here). The same step against the keyed PRF yields a "key" that predicts nothing.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t unmix64(uint64_t x) {
  x = (x ^ (x >> 31) ^ (x >> 62));
  x *= 0x319642b2d24d8ec3ULL;  // inverse of 0x94d049bb133111eb
  x = (x ^ (x >> 27) ^ (x >> 54));
  x *= 0x96de1b173f119089ULL;  // inverse of 0xbf58476d1ce4e5b9
  x = (x ^ (x >> 30) ^ (x >> 60));
  return x - 0x9e3779b97f4a7c15ULL;
}

TEST(KeyedMask, OneKnownElementInvertedTheOldMaskButNotThePrf) {
  for (uint64_t x : {0ULL, 1ULL, 0xdeadbeefcafef00dULL}) ASSERT_EQ(unmix64(mix64(x)), x);
  const uint64_t secret = 0x5eed5eed12345678ULL;
  // The old scheme: element 7's word recovered, the key follows, element 8 is predicted.
  uint64_t word7 = mix64(secret ^ mix64(7));
  uint64_t key = unmix64(word7) ^ mix64(7);
  EXPECT_EQ(key, secret);
  EXPECT_EQ(mix64(key ^ mix64(8)), mix64(secret ^ mix64(8)));
  // The PRF: the same inversion of a known word gives no key that predicts its neighbour.
  MaskKey prf{secret, 0x0badc0ffee0ddf00ULL};
  uint64_t guess = unmix64(sip_word(prf, 7)) ^ mix64(7);
  EXPECT_NE(mix64(guess ^ mix64(8)), sip_word(prf, 8));
  EXPECT_NE(sip_word(MaskKey{guess, 0}, 8), sip_word(prf, 8));
}

TEST(KeyedMask, EveryKeyBitChangesAboutHalfTheMask) {
  MaskKey key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  for (int bit = 0; bit < 128; ++bit) {
    MaskKey flipped = key;
    (bit < 64 ? flipped.k0 : flipped.k1) ^= 1ULL << (bit % 64);
    int changed = 0;
    for (uint64_t w = 0; w < 16; ++w)
      changed += std::popcount(sip_word(key, w) ^ sip_word(flipped, w));
    EXPECT_GT(changed, 16 * 64 / 2 - 120) << bit;  // 512 expected, sd 16
    EXPECT_LT(changed, 16 * 64 / 2 + 120) << bit;
  }
}

TEST(GuardPattern, BytesComeFromTheirWordAndDifferPerSeed) {
  for (uint64_t offset : {0ULL, 7ULL, 8ULL, 65535ULL, 65536ULL + 3})
    EXPECT_EQ(guard_byte(11, offset), uint8_t(guard_word(11, offset / 8) >> (8 * (offset % 8))));
  int equal = 0, repeats = 0;
  for (uint64_t offset = 0; offset < 4096; ++offset) {
    equal += guard_byte(1, offset) == guard_byte(2, offset);
    repeats += offset > 0 && guard_byte(1, offset) == guard_byte(1, offset - 1);
  }
  // Two buffers' guards agree on about 1 byte in 256, and no guard is a repeated byte.
  EXPECT_LT(equal, 60);
  EXPECT_LT(repeats, 60);
}

TEST(GuardPattern, AllocationsAreWholeGranulesWithAtLeastTheTailGuard) {
  for (size_t payload : {size_t(0), size_t(1), size_t(4), kAllocationGranule - 2 * kGuardBytes,
                         kAllocationGranule - 2 * kGuardBytes + 1, size_t(3) << 30}) {
    size_t bytes = guarded_allocation_bytes(payload);
    EXPECT_EQ(bytes % kAllocationGranule, 0u) << payload;
    EXPECT_GE(bytes, payload + 2 * kGuardBytes) << payload;
    EXPECT_LT(bytes, payload + 2 * kGuardBytes + kAllocationGranule) << payload;
  }
}

template <typename T>
T repeated(unsigned char byte) {
  T v;
  std::memset(&v, byte, sizeof v);
  return v;
}
double f16_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : exp == 31 ? NAN : std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}
double bf16_value(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

TEST(ScratchFill, AlternatesNanWithRandomBytesFarFromZero) {
  std::set<unsigned> seen;
  for (uint64_t random = 0; random < 4096; ++random) {
    EXPECT_EQ(scratch_fill_byte(2 * random, random), 0xFF);
    unsigned char b = scratch_fill_byte(2 * random + 1, random * 0x9e3779b97f4a7c15ULL);
    seen.insert(b);
    EXPECT_NE(b, 0xFF);
    EXPECT_GE(std::fabs(repeated<float>(b)), 2.0f) << int(b);
    EXPECT_GE(std::fabs(bf16_value(repeated<uint16_t>(b))), 2.0) << int(b);
    double h = f16_value(repeated<uint16_t>(b));
    EXPECT_TRUE(std::isnan(h) || std::fabs(h) >= 2.0) << int(b);
    EXPECT_GE(std::llabs(repeated<int32_t>(b)), 1 << 24) << int(b);
  }
  EXPECT_GT(seen.size(), 100u);  // a pattern that changes, not a second fixed one
}

// Survivors d1deadeed167 and 089b9af597ef of the mutation run: a store skipped when the output
// already holds a finite value under 1e30, at shapes verified in one round (columns past 8192 of
// a drawn rmsnorm row; a matvec's replay on the second run). The second run's poison must look
// finished in every float type, and differ between rounds.
TEST(SecondRunPoison, FiniteOfOrdinarySizeInEveryTypeAndNotFixed) {
  std::set<unsigned> seen;
  for (uint64_t random = 0; random < 64; ++random) {
    unsigned char b = second_run_poison_byte(random * 0x9e3779b97f4a7c15ULL);
    seen.insert(b);
    for (double v : {double(repeated<float>(b)), bf16_value(repeated<uint16_t>(b)),
                     f16_value(repeated<uint16_t>(b))}) {
      EXPECT_TRUE(std::isfinite(v)) << int(b);
      EXPECT_GT(std::fabs(v), 1e-5) << int(b);
      EXPECT_LT(std::fabs(v), 2.0) << int(b);
    }
    // e4m3: sign 0, exponent bits 0111 (2^0), so 1 <= value < 2; never the NaN code 0x7F.
    EXPECT_EQ(b >> 3, 0x07) << int(b);
  }
  EXPECT_GT(seen.size(), 4u);
}

TEST(TimingPoison, NanThenOutOfRangeThenAStaleAnswer) {
  EXPECT_EQ(timing_poison(0, 4).kind, TimingPoisonKind::kBytes);
  EXPECT_EQ(timing_poison(0, 4).byte, 0xFF);
  EXPECT_EQ(timing_poison(1, 4).byte, 0xFE);
  EXPECT_EQ(timing_poison(2, 4).kind, TimingPoisonKind::kStaleAnswer);
  EXPECT_EQ(timing_poison(5, 2).kind, TimingPoisonKind::kStaleAnswer);
  EXPECT_EQ(timing_poison(3, 4).byte, 0xFF);
  // With one buffer set there is no other set's answer to take.
  EXPECT_EQ(timing_poison(2, 1).kind, TimingPoisonKind::kBytes);
}

}  // namespace
}  // namespace kopt::worker
