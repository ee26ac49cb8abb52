// The keystream that keeps the reference's outputs masked on the GPU: SipHash-2-4 of an 8-byte
// word index under a 128-bit key drawn per worker. It used to be a keyless mix of (key XOR index):
// one element whose true value a candidate could compute gave 32 bits of the mix's output, a
// 2^32 search gave the rest, and the invertible mix then gave the key and every other element.
// SipHash is a PRF: outputs at known positions say nothing usable about the key or other words.
//
// Element i of an element size s takes its bits from keystream word (i*s)/8 at byte (i*s)%8
// (little-endian, as the device stores it), so elements of 1, 2 or 4 bytes share one hash per 8
// bytes. The device twin is in support_kernels_source.h (sip_word, mask_bits); a change here
// must change it too (keyed_mask_test.cc pins both to the same vectors).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kopt::worker {

struct MaskKey {
  uint64_t k0 = 0, k1 = 0;
};

// SipHash-2-4 of `len` bytes (the reference algorithm, for its published test vectors).
uint64_t siphash24(const MaskKey& key, const unsigned char* data, size_t len);
// SipHash-2-4 of one little-endian 64-bit word: the keystream's word `index`.
uint64_t sip_word(const MaskKey& key, uint64_t index);
// The mask of element `index` of `element_size` bytes (1, 2, 4 or 8), in its low bits.
uint64_t mask_bits(const MaskKey& key, uint64_t index, size_t element_size);

}  // namespace kopt::worker
