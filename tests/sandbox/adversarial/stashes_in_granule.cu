// expect: out_of_bounds
// Defence: guards to the end of every allocation's granule, checked after every run (timed
// samples too). This axpy is right, and also keeps a launch counter in the last word of the 2 MiB
// granule its output ends in: past the old 64 KiB tail guard that word was mapped, owned by no
// buffer, never poisoned, scanned or checksummed, so state kept there survived from run to run
// (a reviewed kernel replayed whole answers from there at 12.3x). Every byte of an allocation is
// payload or guard now, and the counter lands in out's tail guard. Twin: stashes_in_granule_twin.cu.
/* kopt:plan
{
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
  if (i == 0) {
    const unsigned long long granule = 2ull << 20;
    unsigned long long end = (unsigned long long)(out + n) + 1;  // past the payload, never on it
    unsigned long long granule_end = (end + granule - 1) & ~(granule - 1);
    unsigned* counter = (unsigned*)(granule_end - sizeof(unsigned));
    *counter += 1;
  }
}
