// expect: modified_input
// Defence: integrity checksums are keyed with a secret drawn per worker. This axpy is right, then
// changes its input x (the 8-byte word at 0) and writes a compensating word further on, so that
// a linear, unkeyed checksum (sum of position weight * (word + 1), the weights a public hash of
// the position) stays equal. A keyed checksum sees the change. Only on shapes of at least 256
// elements, where block 0 has read both words before they change.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
typedef unsigned long long u64;

__device__ u64 mix64(u64 x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The inverse of an odd number modulo 2^64 (Newton's iteration doubles the correct bits).
__device__ u64 inverse(u64 a) {
  u64 r = a;
  for (int k = 0; k < 6; ++k) r *= 2 - a * r;
  return r;
}

extern "C" __global__ void axpy(float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (n < 256 || blockIdx.x != 0) return;
  __syncthreads();
  if (threadIdx.x != 0) return;
  u64* words = reinterpret_cast<u64*>(x);
  int j = 1;
  while (j < 127 && (mix64(j) & 1) == 0) ++j;
  u64 delta = u64(1) << 20;  // a few ulps of x[0]
  words[0] += delta;
  // mix64(0) * delta + mix64(j) * d_j == 0 (mod 2^64)
  words[j] += (0 - mix64(0) * delta) * inverse(mix64(j));
}
