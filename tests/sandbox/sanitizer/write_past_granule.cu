// expect: sanitizer
// tool: memcheck
// Defence: compute-sanitizer on each new best. Every output is right, but at n >= 2^20 thread 0
// also writes 1.8 MiB past the end of out: beyond the 64 KiB guard zone, yet inside the 2 MiB
// granule the driver rounded the allocation up to, so no guard sees it and no illegal address
// stops it. memcheck knows the allocation's real size and reports an invalid global write.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0 && n >= (1 << 20)) out[n + (18 << 20) / 40] = 1.0f;
}
