// Reference transpose: one thread per output element.
/* kopt:plan
{
  "launches": [{"kernel": "transpose_reference", "grid": ["ceil_div(rows*cols, 256)"], "block": [256],
                "args": ["x", "out", "i64:rows", "i64:cols"]}]
}
*/
extern "C" __global__ void transpose_reference(const float* x, float* out, long long rows, long long cols) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  long long c = i / rows, r = i % rows;  // out is [cols, rows]
  out[i] = x[r * cols + c];
}
