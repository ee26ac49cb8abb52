// expect: incorrect|nondeterministic
// Defence: outputs are poisoned with a stale answer too (the correct output for other inputs),
// besides the NaN and out-of-range patterns. This axpy reads its output first and skips an
// element that already holds a plausible result (a finite value under 1e30). Every poison used
// to be implausible, so it always computed and was accepted; in real use a caching allocator
// hands it a buffer holding a previous answer and it returns that. Verification's rounds after
// the first and every third timed sample now start from another input set's answer, which it
// leaves in place. Since the second run of every round starts from finite bytes of ordinary
// size (2026-11-28), that run usually catches it first, as nondeterministic. Twin:
// reads_own_outputs_first.cu.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float old = out[i];
  if (isfinite(old) && fabsf(old) < 1e30f) return;
  out[i] = alpha * x[i] + y[i];
}
