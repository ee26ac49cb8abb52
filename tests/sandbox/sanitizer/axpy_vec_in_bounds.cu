// expect: ok
// The twin of axpy_vec_overreads_inputs.cu: the same float4 axpy, whose last vector, where it
// would hang past the end, is read element by element. memcheck must stay silent on it with
// every buffer an exact allocation.
/* kopt:plan
{
  "launches": [{"kernel": "axpy_vec", "grid": ["ceil_div(n, 1024)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_vec(const float* x, const float* y, float* out, int n,
                                    float alpha) {
  long long v = (long long)blockIdx.x * 256 + threadIdx.x;  // index of a float4
  if (v >= ((long long)n + 3) / 4) return;
  long long i = 4 * v;
  if (i + 3 < n) {
    float4 a = reinterpret_cast<const float4*>(x)[v];
    float4 b = reinterpret_cast<const float4*>(y)[v];
    out[i] = alpha * a.x + b.x;
    out[i + 1] = alpha * a.y + b.y;
    out[i + 2] = alpha * a.z + b.z;
    out[i + 3] = alpha * a.w + b.w;
    return;
  }
  for (long long k = i; k < n; ++k) out[k] = alpha * x[k] + y[k];
}
