// expect: compile_error
// log: device heap
// Defence: the device heap is refused at the compile gate. Memory from device-side malloc (or
// new) outlives a launch and lies outside every buffer the worker poisons, zeroes or checks, so a
// kernel could keep answers there from one timed sample to the next even in a module loaded
// afresh. This axpy is otherwise correct: it only stages its block's values through the heap.
/* kopt:plan
{
  "launches": [{"kernel": "axpy_through_heap", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_through_heap(const float* x, const float* y, float* out, int n,
                                             float alpha) {
  __shared__ float* staging;
  if (threadIdx.x == 0) staging = (float*)malloc(256 * sizeof(float));
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (staging && i < n) staging[threadIdx.x] = alpha * x[i] + y[i];
  __syncthreads();
  if (i < n) out[i] = staging ? staging[threadIdx.x] : alpha * x[i] + y[i];
  __syncthreads();
  if (threadIdx.x == 0 && staging) free(staging);
}
