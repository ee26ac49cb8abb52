// expect: ok
// task: prefix_sum
// The correct twin of scan_publishes_flag_first.cu: the same chained scan, its total stored and
// fenced before its flag is raised, and the predecessor's total read after a fence that follows
// the flag. Its source shows communication between blocks (__threadfence, volatile accesses), so
// it gets the co-run rounds: the GPU test asserts they ran and that the verdict says so.
/* kopt:plan
{
  "scratch": [{"name": "carry", "dtype": "f32", "count": "rows*ceil_div(cols, 1024)"},
              {"name": "ready", "dtype": "i32", "count": "rows*ceil_div(cols, 1024)", "zero": true}],
  "launches": [{"kernel": "chained_scan", "grid": ["ceil_div(cols, 1024)", "rows"], "block": [1024],
                "args": ["x", "out", "carry", "ready", "cols", "i32:ceil_div(cols, 1024)"]}]
}
*/
extern "C" __global__ void chained_scan(const float* x, float* out, float* carry, int* ready,
                                        int cols, int chunks) {
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
    long long row = (long long)blockIdx.y * chunks;
    volatile float* totals = carry + row;
    volatile int* flags = ready + row;
    float p = 0.0f;
    if (blockIdx.x > 0) {
      while (flags[blockIdx.x - 1] == 0) {
      }
      __threadfence();
      p = totals[blockIdx.x - 1];
    }
    totals[blockIdx.x] = p + s[1023];
    __threadfence();
    flags[blockIdx.x] = 1;
    prefix = p;
  }
  __syncthreads();
  if (c < cols) out[base + c] = prefix + s[threadIdx.x];
}
