// Online softmax: one pass for max and sum together, one pass to write; float4 when rows align.
// test-evaluator: time_us=62
/* kopt:plan
{
  "tunables": {"BLOCK":[1024,512,256]},
  "launches": [
    {"kernel":"softmax_online","grid":["rows"],"block":["BLOCK"],"args":["x","out","rows","cols"]}
  ]
}
*/
__device__ __forceinline__ void merge_max_sum(float& m, float& s, float other_m, float other_s) {
  float nm = fmaxf(m, other_m);
  s = s * expf(m - nm) + other_s * expf(other_m - nm);
  m = nm;
}

extern "C" __global__ void softmax_online(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
  const float* row = x + (long long)blockIdx.x * cols;
  float* out_row = out + (long long)blockIdx.x * cols;
  const float lowest = -3.402823466e+38f;
  float m = lowest, s = 0.0f;
  const bool vec = (cols % 4) == 0;
  if (vec) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int i = threadIdx.x; i < cols / 4; i += BLOCK) {
      float4 v = row4[i];
      float nm = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      s = s * expf(m - nm) + expf(v.x - nm) + expf(v.y - nm) + expf(v.z - nm) + expf(v.w - nm);
      m = nm;
    }
  } else {
    for (int i = threadIdx.x; i < cols; i += BLOCK) {
      float v = row[i];
      float nm = fmaxf(m, v);
      s = s * expf(m - nm) + expf(v - nm);
      m = nm;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    float om = __shfl_xor_sync(0xffffffffu, m, offset);
    float os = __shfl_xor_sync(0xffffffffu, s, offset);
    merge_max_sum(m, s, om, os);
  }
  __shared__ float warp_max[32];
  __shared__ float warp_sum[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_max[warp] = m;
    warp_sum[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < BLOCK / 32 ? warp_max[lane] : lowest;
    s = lane < BLOCK / 32 ? warp_sum[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) {
      float om = __shfl_xor_sync(0xffffffffu, m, offset);
      float os = __shfl_xor_sync(0xffffffffu, s, offset);
      merge_max_sum(m, s, om, os);
    }
    if (lane == 0) {
      warp_max[0] = m;
      warp_sum[0] = s;
    }
  }
  __syncthreads();
  const float row_max = warp_max[0];
  const float inv_sum = 1.0f / warp_sum[0];
  if (vec) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    float4* out4 = reinterpret_cast<float4*>(out_row);
    for (int i = threadIdx.x; i < cols / 4; i += BLOCK) {
      float4 v = row4[i];
      out4[i] = make_float4(expf(v.x - row_max) * inv_sum, expf(v.y - row_max) * inv_sum,
                            expf(v.z - row_max) * inv_sum, expf(v.w - row_max) * inv_sum);
    }
  } else {
    for (int i = threadIdx.x; i < cols; i += BLOCK) out_row[i] = expf(row[i] - row_max) * inv_sum;
  }
}
