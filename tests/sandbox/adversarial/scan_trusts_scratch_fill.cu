// expect: incorrect|nondeterministic
// task: prefix_sum
// Defence: scratch that the plan does not ask to be zeroed holds a fill that changes from run to
// run (NaN bytes, then a random byte far from zero). A chained scan: block b of a row scans its
// 1024 elements and waits for block b-1's inclusive total in scratch, taking NaN (the fill was
// always 0xFF) to mean "not ready yet". Scratch fill is no state to rely on: on a run whose fill
// is a number, block b takes that number as its predecessor's total. (compute-sanitizer's
// initcheck cannot see this: the fill initialises the memory.) Twin: scan_trusts_scratch_fill_twin.cu.
/* kopt:plan
{
  "scratch": [{"name": "carry", "dtype": "f32", "count": "rows*ceil_div(cols, 1024)"}],
  "launches": [{"kernel": "chained_scan", "grid": ["ceil_div(cols, 1024)", "rows"], "block": [1024],
                "args": ["x", "out", "carry", "cols", "i32:ceil_div(cols, 1024)"]}]
}
*/
extern "C" __global__ void chained_scan(const float* x, float* out, float* carry, int cols,
                                        int chunks) {
  __shared__ float s[1024];
  __shared__ float prefix;
  long long base = (long long)blockIdx.y * cols;
  int c = blockIdx.x * 1024 + threadIdx.x;
  s[threadIdx.x] = c < cols ? x[base + c] : 0.0f;
  __syncthreads();
  for (int offset = 1; offset < 1024; offset *= 2) {
    float add = threadIdx.x >= offset ? s[threadIdx.x - offset] : 0.0f;
    __syncthreads();
    s[threadIdx.x] += add;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    volatile float* totals = carry + (long long)blockIdx.y * chunks;
    float p = 0.0f;
    if (blockIdx.x > 0) {
      float v;
      while (isnan(v = totals[blockIdx.x - 1])) {
      }  // "not ready": the fill is NaN, it was assumed
      p = v;
    }
    prefix = p;
    totals[blockIdx.x] = p + s[1023];
    __threadfence();
  }
  __syncthreads();
  if (c < cols) out[base + c] = prefix + s[threadIdx.x];
}
