#include "sandbox/worker/cupti_timer.h"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace kopt::worker {
namespace {

constexpr size_t kBufferBytes = 8 << 20;

std::mutex g_mutex;
std::vector<KernelRecord> g_records;
uint64_t g_dropped = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
    g_records.push_back({k->streamId, k->start, k->end, k->name ? k->name : ""});
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    g_dropped += dropped;
  std::free(buffer);
}

Error cupti_error(const char* call, CUptiResult rc) {
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  return make_error(std::string(call) + ": " + (text ? text : "unknown CUPTI error"));
}

bool g_enabled = false;  // enable() succeeded

}  // namespace

Status CuptiKernelTimer::pause() {
  if (!g_enabled) return ok_status();
  CUptiResult rc = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityFlushAll", rc);
  rc = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityDisable(CONCURRENT_KERNEL)", rc);
  return ok_status();
}

Status CuptiKernelTimer::resume() {
  if (!g_enabled) return ok_status();
  CUptiResult rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityEnable(CONCURRENT_KERNEL)", rc);
  return ok_status();
}

Status CuptiKernelTimer::enable() {
  CUptiResult rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityRegisterCallbacks", rc);
  rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityEnable(CONCURRENT_KERNEL)", rc);
  g_enabled = true;
  return ok_status();
}

Result<uint32_t> CuptiKernelTimer::stream_id(CUcontext context, CUstream stream) {
  uint32_t id = 0;
  CUptiResult rc = cuptiGetStreamIdEx(context, stream, 0, &id);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiGetStreamIdEx", rc);
  return id;
}

Result<std::vector<KernelRecord>> CuptiKernelTimer::collect() {
  CUptiResult rc = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (rc != CUPTI_SUCCESS) return cupti_error("cuptiActivityFlushAll", rc);
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<KernelRecord> out;
  out.swap(g_records);
  return out;
}

uint64_t CuptiKernelTimer::dropped() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_dropped;
}

// Only the measured stream's records come here: poison and flush are memsets (no kernels to
// CUPTI) and output hashes run on the worker's own stream, so none of them enters a span.
Result<std::vector<double>> split_into_samples(std::vector<KernelRecord> records, size_t launches,
                                               const std::string& who) {
  std::sort(records.begin(), records.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  if (launches == 0 || records.size() % launches != 0)
    return make_error(who + ": " + std::to_string(records.size()) +
                      " kernel records do not split into samples of " + std::to_string(launches) +
                      " launches: the kernel set changed between iterations");
  std::vector<double> spans;
  for (size_t i = 0; i < records.size(); i += launches) {
    for (size_t k = 1; k < launches; ++k) {
      if (records[i + k].name != records[k].name)
        return make_error(who + ": the kernel set changed between iterations");
    }
    spans.push_back(double(records[i + launches - 1].end_ns - records[i].start_ns) * 1e-3);
  }
  return spans;
}

}  // namespace kopt::worker
