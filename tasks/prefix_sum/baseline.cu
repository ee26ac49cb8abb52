// Baseline inclusive prefix sum: one block per row, walking the row in chunks of BLOCK elements.
// Each chunk is scanned in shared memory (Hillis-Steele, log2(BLOCK) steps), offset by the running
// total of the previous chunks, and written out. Scalar loads. BLOCK is tunable.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512, 1024]},
  "launches": [{"kernel": "prefix_sum_rows", "grid": ["rows"], "block": ["BLOCK"], "shared_bytes": "BLOCK*4",
                "args": ["x", "out", "cols"]}]
}
*/
extern "C" __global__ void prefix_sum_rows(const float* x, float* out, int cols) {
  extern __shared__ float chunk[];
  long long base = (long long)blockIdx.x * cols;
  float carry = 0.0f;
  for (int start = 0; start < cols; start += BLOCK) {
    int c = start + threadIdx.x;
    chunk[threadIdx.x] = c < cols ? x[base + c] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
      float add = threadIdx.x >= offset ? chunk[threadIdx.x - offset] : 0.0f;
      __syncthreads();
      chunk[threadIdx.x] += add;
      __syncthreads();
    }
    if (c < cols) out[base + c] = carry + chunk[threadIdx.x];
    carry += chunk[BLOCK - 1];
    __syncthreads();  // everyone has read the chunk before the next one overwrites it
  }
}
