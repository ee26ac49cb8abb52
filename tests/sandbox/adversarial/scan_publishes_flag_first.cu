// expect: incorrect|nondeterministic
// task: prefix_sum
// Defence: co-run rounds (sandbox/worker/co_runner.h) for a kernel whose source shows
// communication between blocks (sandbox/inter_block_scan.h). A chained scan: block b of a row
// scans its 1024 elements, waits for block b-1's "ready" flag and adds its inclusive total. Here
// block b raises its own flag as soon as it has its predecessor's total in hand and only then
// stores its own total, with no __threadfence on either side: the store of the flag does not wait
// for the load of the predecessor's total, so the next block may see the flag and read a total
// that is not there yet (the scratch's fill: NaN or a random number). Whether it does depends on
// where and when the blocks run and how long their loads take, which the co-running kernel
// varies (it holds a share of the SMs and loads and stores through DRAM). The race may also show
// in a plain round: the verdict is what the test asserts; that the co-run rounds ran is asserted on
// the twin, scan_publishes_flag_first_twin.cu.
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
      p = totals[blockIdx.x - 1];
    }
    flags[blockIdx.x] = 1;  // published before the total it announces
    totals[blockIdx.x] = p + s[1023];
    prefix = p;
  }
  __syncthreads();
  if (c < cols) out[base + c] = prefix + s[threadIdx.x];
}
