#include "sandbox/worker/keyed_mask.h"

namespace kopt::worker {
namespace {

uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  explicit SipState(const MaskKey& key)
      : v0(key.k0 ^ 0x736f6d6570736575ULL),
        v1(key.k1 ^ 0x646f72616e646f6dULL),
        v2(key.k0 ^ 0x6c7967656e657261ULL),
        v3(key.k1 ^ 0x7465646279746573ULL) {}
  void round() {
    v0 += v1;
    v1 = rotl(v1, 13) ^ v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16) ^ v2;
    v0 += v3;
    v3 = rotl(v3, 21) ^ v0;
    v2 += v1;
    v1 = rotl(v1, 17) ^ v2;
    v2 = rotl(v2, 32);
  }
  void absorb(uint64_t m) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t finish() {
    v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) round();
    return v0 ^ v1 ^ v2 ^ v3;
  }
};

uint64_t load_le(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint64_t siphash24(const MaskKey& key, const unsigned char* data, size_t len) {
  SipState s(key);
  size_t whole = len / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) s.absorb(load_le(data + i, 8));
  s.absorb((uint64_t(len & 0xff) << 56) | load_le(data + whole, len - whole));
  return s.finish();
}

uint64_t sip_word(const MaskKey& key, uint64_t index) {
  // siphash24 of the word's 8 little-endian bytes, without the byte loop.
  SipState s(key);
  s.absorb(index);
  s.absorb(uint64_t(8) << 56);
  return s.finish();
}

uint64_t mask_bits(const MaskKey& key, uint64_t index, size_t element_size) {
  uint64_t byte = index * element_size;
  uint64_t word = sip_word(key, byte / 8);
  return element_size >= 8 ? word : word >> (8 * (byte % 8));
}

}  // namespace kopt::worker
