// expect: incorrect|nondeterministic
// Defence: the second run of every verification round starts from finite bytes of ordinary size
// (memory_patterns.h, second_run_poison_byte). This axpy skips an element whose output already
// holds a plausible result (finite, under 1e30) only for 1 < n < 600: sizes that only drawn and
// threshold shapes reach (the plan's block of 256 puts n = 257 and 513 among them), each verified
// in one round. That round's first run started from NaN bytes and its second from 0x7F bytes
// (3.4e38 in f32, no plausible answer), and the timed shape never takes the branch, so it always
// computed and was accepted; it is the mutation harness's output_read_first survivors at a size
// only one round sees. Twin: reads_own_outputs_first.cu.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (n > 1 && n < 600) {
    float old = out[i];
    if (isfinite(old) && fabsf(old) < 1e30f) return;
  }
  out[i] = alpha * x[i] + y[i];
}
