// expect: incorrect
// task: mse_loss
// Defence: guard zones of per-buffer random bytes. A vectorised MSE: every thread loads one float4
// of pred and of target and the last vector is not masked, so for n not a multiple of 4 it reads
// up to 3 floats past the end of both inputs and adds their squared difference. With one guard
// pattern for every buffer (0xA5) both over-reads held the same bytes and added exact zeros: the
// kernel passed every shape. Each buffer's guard is random now, so the extra terms are garbage.
// Twin: overreads_both_inputs_twin.cu.
/* kopt:plan
{
  "scratch": [{"name": "partial", "dtype": "f32", "count": "ceil_div(n, 1024)"}],
  "launches": [
    {"kernel": "mse_vec_sums", "grid": ["ceil_div(n, 1024)"], "block": [256],
     "args": ["pred", "target", "partial", "n"]},
    {"kernel": "mse_vec_finish", "grid": [1], "block": [1024],
     "args": ["partial", "out", "i32:ceil_div(n, 1024)", "n"]}
  ]
}
*/
extern "C" __global__ void mse_vec_sums(const float* pred, const float* target, float* partial,
                                        int n) {
  __shared__ float sums[256];
  long long v = (long long)blockIdx.x * 256 + threadIdx.x;  // index of a float4
  float s = 0.0f;
  if (v < ((long long)n + 3) / 4) {  // the last vector may hang past the end: not masked
    float4 p = reinterpret_cast<const float4*>(pred)[v];
    float4 t = reinterpret_cast<const float4*>(target)[v];
    float d0 = p.x - t.x, d1 = p.y - t.y, d2 = p.z - t.z, d3 = p.w - t.w;
    s = d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
  }
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int stride = 128; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

extern "C" __global__ void mse_vec_finish(const float* partial, float* out, int blocks, int n) {
  __shared__ float sums[1024];
  float s = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += 1024) s += partial[b];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int stride = 512; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sums[0] / (float)n;
}
