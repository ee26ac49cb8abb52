// What the worker writes into memory a candidate must not rely on, chosen so that no fixed
// guess about it holds: guard zones, scratch before a run, outputs before a timed sample.
//
// - Guard bytes come from a per-buffer random seed (drawn whenever a buffer is made), so the
//   guards of two inputs differ: an over-read past the end of both no longer reads equal bytes
//   (with one 0xA5 fill, pred - target past the end was an exact 0 and a vectorised loss passed).
// - Scratch that the plan does not ask to be zeroed alternates per run between NaN bytes (a read
//   before a write shows as NaN) and a random byte whose every type's value is far from zero, so
//   "scratch still holds the fill" is no defined state (a chained scan took 0xFF as "not ready").
// - Timed outputs are poisoned in turn with NaN bytes, a pattern verification never uses, and
//   the correct answer of another input set (a stale answer): a kernel that skips outputs which
//   "already look finished" leaves a wrong answer there, as it would in a caching allocator.
// - A verification round's second run starts from finite bytes of ordinary size, so a shape
//   verified in one round meets an output that looks finished too.
//
// Pure functions: the device's twins are in support_kernels_source.h (guard_word).
#pragma once

#include <cstdint>

namespace kopt::worker {

// Word `word` (8 bytes, little-endian) of the guard pattern of a buffer armed with `seed`.
inline uint64_t guard_word(uint64_t seed, uint64_t word) {
  uint64_t x = seed ^ (word * 0x9e3779b97f4a7c15ULL);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Byte `offset` of a guarded allocation armed with `seed`.
inline unsigned char guard_byte(uint64_t seed, uint64_t offset) {
  return static_cast<unsigned char>(guard_word(seed, offset / 8) >> (8 * (offset % 8)));
}

// The byte scratch is filled with before run number `run` of a process, from `random` (any
// value): NaN bytes on even runs; otherwise 0x40-0x7E or 0xC0-0xFE, bytes whose repetition is
// of magnitude at least 2 in f32, bf16 and e4m3 (at least 2, or NaN, in f16) and a large
// integer in i32/i64: never zero, never negligible.
inline unsigned char scratch_fill_byte(uint64_t run, uint64_t random) {
  if (run % 2 == 0) return 0xFF;
  unsigned char low = static_cast<unsigned char>(0x40 + random % 0x3F);  // 0x40..0x7E
  return (random >> 8) & 1 ? static_cast<unsigned char>(low | 0x80) : low;
}

// What the outputs hold before the second run of a verification round, from `random` (the
// round's seed): 0x38-0x3F bytes, a finite value of ordinary size in every float type (f32 and
// bf16 4.4e-5 to 0.75, f16 0.53 to 1.8, e4m3 1 to 1.9). The first run starts from NaN bytes, or
// from the previous round's answer; a shape verified in one round (a drawn, threshold or holdout
// shape) had no plausible answer in its outputs before, so a kernel that skips outputs which
// "already look finished" (finite, under 1e30) always computed there. Now it leaves these.
inline unsigned char second_run_poison_byte(uint64_t random) {
  return static_cast<unsigned char>(0x38 + random % 8);
}

// What a timed sample's outputs hold before the candidate runs.
enum class TimingPoisonKind { kBytes, kStaleAnswer };
struct TimingPoison {
  TimingPoisonKind kind = TimingPoisonKind::kBytes;
  unsigned char byte = 0xFF;  // for kBytes
};
// The poison of the `visit`-th sample on one buffer set when `sets` sets rotate: NaN bytes, then
// 0xFE bytes (-1.7e38 in f32), then (with another set to take it from) the stale answer.
inline TimingPoison timing_poison(int visit, int sets) {
  int phase = visit % 3;
  if (phase == 2 && sets >= 2) return {TimingPoisonKind::kStaleAnswer, 0};
  return {TimingPoisonKind::kBytes, static_cast<unsigned char>(phase == 1 ? 0xFE : 0xFF)};
}

}  // namespace kopt::worker
