// expect: nondeterministic|incorrect
// Defence: the candidate runs twice on the same inputs and both runs must agree (and each must
// match the reference). Thread 0 of every block bumps a global counter with a plain read and
// write, a data race: concurrent blocks read the same value and updates are lost, differently
// on every run. Blocks whose ticket differs from their index write a wrong value, so the set of
// wrong elements changes from run to run.
/* kopt:plan
{
  "launches": [
    {"kernel": "reset_arrivals", "grid": [1], "block": [1], "args": []},
    {"kernel": "axpy_racy", "grid": ["ceil_div(n, 256)"], "block": [256],
     "args": ["x", "y", "out", "n", "alpha"]}
  ]
}
*/
__device__ unsigned int g_arrivals;

extern "C" __global__ void reset_arrivals() { g_arrivals = 0; }

extern "C" __global__ void axpy_racy(const float* x, const float* y, float* out, int n,
                                     float alpha) {
  __shared__ unsigned int ticket;
  if (threadIdx.x == 0) {
    volatile unsigned int* counter = &g_arrivals;
    unsigned int seen = *counter;  // read ...
    *counter = seen + 1;           // ... then write, with no atomic in between
    ticket = seen;
  }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float value = alpha * x[i] + y[i];
    out[i] = ticket == blockIdx.x ? value : value + 0.5f;
  }
}
