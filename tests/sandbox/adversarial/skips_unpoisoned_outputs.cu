// expect: incorrect
// Defence: every timed sample is poisoned and checked. This axpy computes an element only while
// its output still holds one of verification's poison patterns (bytes 0xFF, or one byte of
// 0x38-0x3F repeated: the second run's, memory_patterns.h) and
// otherwise leaves it alone: every verification run poisons first, so it passes there; a timing
// loop that poisons once and checks only the final contents would time near-empty launches that
// leave the first sample's results in place. The timing loop's own poison (a pattern
// verification never uses, every other visit of a buffer set) stays in the output, and that
// sample's check fails.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned bits = __float_as_uint(out[i]);
  unsigned low = bits & 0xFFu;
  bool second_run = low >= 0x38u && low <= 0x3Fu && bits == low * 0x01010101u;
  if (bits != 0xFFFFFFFFu && !second_run) return;
  out[i] = alpha * x[i] + y[i];
}
