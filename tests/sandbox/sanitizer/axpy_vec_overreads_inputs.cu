// expect: sanitizer
// tool: memcheck
// Defence: under compute-sanitizer every buffer is its own allocation of exactly its payload
// (EvalOptions::exact_allocations). A float4 axpy whose last vector is not masked: for n not a
// multiple of 4 it loads up to 3 floats past the end of x and of y, and drops those lanes (only
// in-bounds lanes are stored), so every output is right. The read landed in the buffer's own
// tail guard zone, inside the same allocation, where memcheck saw nothing and the zones' checks
// (writes only) saw nothing either; a caller's exact-size allocation can fault there.
// Twin: axpy_vec_in_bounds.cu.
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
  float4 a = reinterpret_cast<const float4*>(x)[v];  // the last vector may hang past the end
  float4 b = reinterpret_cast<const float4*>(y)[v];
  long long i = 4 * v;
  out[i] = alpha * a.x + b.x;
  if (i + 1 < n) out[i + 1] = alpha * a.y + b.y;
  if (i + 2 < n) out[i + 2] = alpha * a.z + b.z;
  if (i + 3 < n) out[i + 3] = alpha * a.w + b.w;
}
