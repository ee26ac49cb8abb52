// Profile test kernel: axpy streamed with 16-byte loads and stores, a grid-stride loop and enough
// blocks in flight to saturate DRAM. Its profile must show DRAM near the peak and no shared
// memory at all.
/* kopt:plan
{
  "launches": [{"kernel": "streaming_axpy", "grid": ["132 * 8"], "block": ["512"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void streaming_axpy(const float* x, const float* y, float* out, int n,
                                          float alpha) {
  int vectors = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  float4* out4 = reinterpret_cast<float4*>(out);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += gridDim.x * blockDim.x) {
    float4 a = __ldcs(x4 + i), b = __ldcs(y4 + i);
    __stcs(out4 + i, make_float4(alpha * a.x + b.x, alpha * a.y + b.y, alpha * a.z + b.z,
                                 alpha * a.w + b.w));
  }
  for (int i = vectors * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    out[i] = alpha * x[i] + y[i];
}
