// kopt's own device code: input generation, output comparison, checksums and the clock probe.
// Generating and checking on the GPU keeps an evaluation of a 2^26-element task well under a second
// (host-side generation of normals alone would take seconds). Compiled once per worker.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "sandbox/dtype.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/keyed_mask.h"
#include "sandbox/worker/probe_reading.h"

namespace kopt::worker {

// Result of comparing `n` elements of `actual` against `expected`.
struct CompareStats {
  uint64_t failed = 0;      // elements outside atol + rtol*|expected|
  uint64_t non_finite = 0;  // NaN/Inf in actual where expected is finite
  uint64_t expected_non_finite = 0;
  uint64_t actual_nonzero = 0;
  uint64_t expected_unlike_zero = 0;  // reference elements outside tolerance of zero
  double max_error = 0;
  int64_t worst_index = -1;  // an element with the largest error (or the first non-finite)
};

// What a guard scan found: 0 for an intact zone.
struct GuardDamage {
  uint64_t head_distance =
      0;                     // bytes before the start of the nearest damaged byte (1 = just before)
  uint64_t tail_offset = 0;  // bytes past the end of the first damaged byte (1 = just past)
};

// An init's expressions evaluated at one shape: randint bounds and the run length.
struct FillBounds {
  int64_t int_low = 0, int_high = 1;
  int64_t repeat = 1;
  int64_t row = 0;          // structured rows: the row length (0: none)
  int64_t max_spacing = 0;  // repeated maxima: the spacing (0: none)
};

class SupportKernels {
 public:
  static Result<SupportKernels> load(Device& device, const std::string& arch);
  // Every kernel load() asks NVRTC for (also what the CPU test compiles).
  static std::vector<std::string> kernel_names();
  Device& device() const { return *device_; }

  // Fills a tensor's elements from its init distribution, on the GPU.
  Status fill(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
              const FillBounds& bounds, uint64_t seed);
  // Plants an input family's row pattern over a fill (sandbox/input_families.h); float only.
  Status plant_rows(CUdeviceptr data, DType dtype, int64_t n, const RowPattern& pattern,
                    int64_t row, uint64_t seed);
  // `expected_masked`: `expected` holds values masked by mask() (the reference's kept outputs).
  Result<CompareStats> compare(CUdeviceptr actual, CUdeviceptr expected, DType dtype, int64_t n,
                               double atol, double rtol, bool expected_masked = false);
  // Masks (or unmasks: the same XOR) `n` elements in place with a keystream of the worker's
  // secret (a PRF, keyed_mask.h): the reference's outputs are kept masked so a candidate that
  // finds them in memory reads noise, and one value it knows does not unmask the rest.
  Status mask(CUdeviceptr data, DType dtype, int64_t n);
  // Keyed, position-sensitive 64-bit checksum of `bytes` bytes (a multiple of 4 is not required):
  // the key is the worker's secret, so a change plus a compensating word does not go unseen.
  Result<uint64_t> checksum(CUdeviceptr data, size_t bytes);
  // Checksums of many buffers with one read-back for all of them.
  Result<std::vector<uint64_t>> checksums(
      const std::vector<std::pair<CUdeviceptr, size_t>>& buffers);
  // Estimated SM clock in MHz from %globaltimer and clock64 around a fixed spin.
  Result<double> probe_clock_mhz();
  // Measured FP32 FMA throughput of the device, in flop/s.
  Result<double> measure_fp32_flops();
  // Bytes read plus written per second by a 16-byte-vectorized copy of `bytes` bytes.
  Result<double> measure_copy_bandwidth(CUdeviceptr from, CUdeviceptr to, size_t bytes);
  // Times `reps` launches of the FMA kernel (8 blocks of 256 threads per SM, `iterations` long),
  // one by one: the busy-GPU probe. Compute-bound on purpose: its time does not drift with the
  // DRAM's state after heavy traffic, yet any other context's work delays it.
  Result<std::vector<FmaRep>> time_fma(int iterations, int reps);
  // Scans the guard zones of many buffers on the GPU with one read-back for all of them.
  Result<std::vector<GuardDamage>> scan_guards(const std::vector<GuardZones>& regions);
  // Reads element `index` as double (unmasked first when `masked`).
  Result<double> read_element(CUdeviceptr data, DType dtype, int64_t index, bool masked = false);
  // One of kernel_names() for a caller that launches it on a stream of its own (co_runner.h).
  Result<CUfunction> function(const std::string& name) const;

 private:
  // Launches on the worker's stream; `sync` waits for it (kernels whose results are read back
  // next skip that: read_back waits once for everything before it).
  Status launch(const std::string& name, unsigned grid, unsigned block, void** args,
                bool sync = true);
  Status read_back(void* host, CUdeviceptr from, size_t bytes);
  // The parts of fill: the distribution alone, and monotone rows (structured inputs).
  Status fill_plain(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
                    const FillBounds& bounds, uint64_t seed);
  Status fill_sorted(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
                     const FillBounds& bounds, uint64_t seed);
  Device* device_ = nullptr;
  std::shared_ptr<Module> module_;
  std::map<std::string, CUfunction> functions_;
  DeviceMemory stats_;  // scratch for CompareStats and checksums
  DeviceMemory probe_;
  static constexpr size_t kMaxGuardScan = 256;  // buffers per scan_guards launch batch
  static constexpr size_t kMaxChecksums = 256;  // buffers per checksums read-back
  DeviceMemory checksum_slots_;
  DeviceMemory guard_results_;
  // The worker's secrets, drawn from the random device at load and never written to the GPU's
  // memory (they reach it only as launch parameters).
  uint64_t checksum_key_ = 0;
  MaskKey mask_key_;
};

}  // namespace kopt::worker
