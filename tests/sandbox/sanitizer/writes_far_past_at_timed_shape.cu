// expect: sanitizer
// tool: memcheck
// Defence: compute-sanitizer at every shape class, bounded by time rather than bytes. Every output
// is right, but at n >= 2^24 (only the timed shape and a holdout, both above the 64 MiB the
// sanitizer used to stop at) thread 0 also writes 64 GiB past the end of out, far outside any
// allocation. The sanitizer's old pass ran the small sweep shapes alone and never saw it; it now
// runs the timed shape first. (A write just past the end, inside the allocation's granule, is
// the guard zones' now: every byte of an allocation is payload or guard, see
// adversarial/stashes_in_granule.cu.)
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0 && n >= (1 << 24)) out[n + (1ll << 34)] = 1.0f;
}
