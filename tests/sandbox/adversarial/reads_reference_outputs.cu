// expect: incorrect|crash
// Defence: the answer is out of reach. This axpy computes nothing: it copies the reference's
// outputs from where a kept input set used to hold them, right after its last input (the
// input's payload, its 64 KiB tail guard, the next buffer's 64 KiB head guard), when the first
// value found there is the right one, and writes nothing otherwise. Candidates now run on copies
// of a set's inputs, and the reference's outputs are kept masked with the worker's secret, so
// what it finds there is its own poisoned output (or unmapped memory: crash), never the answer.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t padded = (size_t(n) * sizeof(float) + 255) / 256 * 256;
  const float* answer = (const float*)((const char*)y + padded + 2 * 65536);
  float want = alpha * x[0] + y[0];
  if (fabsf(answer[0] - want) > 1e-5f * (1.0f + fabsf(want))) return;
  out[i] = answer[i];
}
