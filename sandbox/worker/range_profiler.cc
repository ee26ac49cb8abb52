#include "sandbox/worker/range_profiler.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <cstdio>
#include <set>

namespace kopt::worker {
namespace {

bool is_permission_error(CUptiResult rc) {
  return rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
         rc == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES;
}

std::string describe(const char* call, CUptiResult rc) {
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  return std::string(call) + ": " + (text ? text : "unknown CUPTI error") + " (" +
         std::to_string(int(rc)) + ")";
}

constexpr const char* kPermissionHelp =
    "the driver allows GPU performance counters to admin users only (ERR_NVGPUCTRPERM); run "
    "the daemon as root, or load nvidia with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)";

CUpti_Profiler_Host_Object* host_of(void* p) { return static_cast<CUpti_Profiler_Host_Object*>(p); }

// The range profiler enabled on a context for one pass, disabled again whatever happens.
class EnabledProfiler {
 public:
  explicit EnabledProfiler(CUcontext context) {
    CUpti_RangeProfiler_Enable_Params p{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    p.ctx = context;
    rc_ = cuptiRangeProfilerEnable(&p);
    object_ = p.pRangeProfilerObject;
  }
  ~EnabledProfiler() {
    if (!object_) return;
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object_;
    cuptiRangeProfilerDisable(&p);
  }
  EnabledProfiler(const EnabledProfiler&) = delete;
  EnabledProfiler& operator=(const EnabledProfiler&) = delete;
  CUptiResult status() const { return rc_; }
  CUpti_RangeProfiler_Object* get() const { return object_; }

 private:
  CUptiResult rc_ = CUPTI_SUCCESS;
  CUpti_RangeProfiler_Object* object_ = nullptr;
};

// Base names ("dram__bytes_read") of every metric the chip knows.
std::set<std::string> base_metrics(CUpti_Profiler_Host_Object* host) {
  std::set<std::string> names;
  for (auto type :
       {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    CUpti_Profiler_Host_GetBaseMetrics_Params p{
        CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    p.pHostObject = host;
    p.metricType = type;
    if (cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numMetrics; ++i) names.insert(p.ppMetricNames[i]);
  }
  return names;
}

std::vector<const char*> c_names(const std::vector<std::string>& names) {
  std::vector<const char*> out;
  for (const auto& n : names) out.push_back(n.c_str());
  return out;
}

}  // namespace

Result<std::unique_ptr<RangeProfiler>> RangeProfiler::create(CUcontext context, int device_ordinal,
                                                             ProfilerUnavailable* unavailable) {
  auto refuse = [&](const std::string& why) -> Result<std::unique_ptr<RangeProfiler>> {
    unavailable->reason = why;
    return make_error(why);
  };
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUptiResult rc = cuptiProfilerInitialize(&init);
  if (rc != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerInitialize", rc) +
                  (is_permission_error(rc) ? std::string(": ") + kPermissionHelp : ""));
  std::unique_ptr<RangeProfiler> self(new RangeProfiler());
  self->context_ = context;
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = size_t(device_ordinal);
  if ((rc = cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiDeviceGetChipName", rc));
  self->chip_ = chip.pChipName;

  // Counter availability needs the profiler enabled on the context; it is also where a missing
  // permission shows first.
  std::vector<uint8_t> availability;
  {
    EnabledProfiler enabled(context);
    if (enabled.status() != CUPTI_SUCCESS) {
      std::string why = describe("cuptiRangeProfilerEnable", enabled.status());
      if (is_permission_error(enabled.status())) why += std::string(": ") + kPermissionHelp;
      return refuse(why);
    }
    CUpti_Profiler_GetCounterAvailability_Params a{
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    a.ctx = context;
    if ((rc = cuptiProfilerGetCounterAvailability(&a)) != CUPTI_SUCCESS)
      return refuse(describe("cuptiProfilerGetCounterAvailability", rc) +
                    (is_permission_error(rc) ? std::string(": ") + kPermissionHelp : ""));
    availability.resize(a.counterAvailabilityImageSize);
    a.pCounterAvailabilityImage = availability.data();
    if ((rc = cuptiProfilerGetCounterAvailability(&a)) != CUPTI_SUCCESS)
      return refuse(describe("cuptiProfilerGetCounterAvailability", rc));
  }

  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = self->chip_.c_str();
  host.pCounterAvailabilityImage = availability.data();
  if ((rc = cuptiProfilerHostInitialize(&host)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerHostInitialize", rc) + " for chip " + self->chip_);
  self->host_ = host.pHostObject;

  // Metrics this chip lacks (gmma stalls before Hopper) are left out and read as 0.
  auto known = base_metrics(host_of(self->host_));
  for (const auto& name : profile_metric_names())
    if (known.count(name.substr(0, name.find('.')))) self->supported_.push_back(name);
  auto names = c_names(self->supported_);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host_of(self->host_);
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  if ((rc = cuptiProfilerHostConfigAddMetrics(&add)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerHostConfigAddMetrics", rc));
  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host_of(self->host_);
  if ((rc = cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerHostGetConfigImageSize", rc));
  self->config_.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host_of(self->host_);
  image.configImageSize = self->config_.size();
  image.pConfigImage = self->config_.data();
  if ((rc = cuptiProfilerHostGetConfigImage(&image)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerHostGetConfigImage", rc));
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = self->config_.size();
  passes.pConfigImage = self->config_.data();
  if ((rc = cuptiProfilerHostGetNumOfPasses(&passes)) != CUPTI_SUCCESS)
    return refuse(describe("cuptiProfilerHostGetNumOfPasses", rc));
  self->passes_ = passes.numOfPasses;
  return self;
}

RangeProfiler::~RangeProfiler() {
  if (!host_) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = host_of(host_);
  cuptiProfilerHostDeinitialize(&p);
}

Result<std::vector<RangeValues>> RangeProfiler::profile(const std::function<Status()>& before_pass,
                                                        const std::function<Status()>& run_once,
                                                        size_t launches) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto phase = Clock::now();
  timing_ = Timing{};
  EnabledProfiler enabled(context_);
  if (enabled.status() != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerEnable", enabled.status()));
  auto names = c_names(supported_);
  CUpti_RangeProfiler_GetCounterDataSize_Params size{
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = enabled.get();
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = launches;
  size.maxNumRangeTreeNodes = uint32_t(launches);
  CUptiResult rc = cuptiRangeProfilerGetCounterDataSize(&size);
  if (rc != CUPTI_SUCCESS) return make_error(describe("cuptiRangeProfilerGetCounterDataSize", rc));
  std::vector<uint8_t> counter_data(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = enabled.get();
  init.counterDataSize = counter_data.size();
  init.pCounterData = counter_data.data();
  if ((rc = cuptiRangeProfilerCounterDataImageInitialize(&init)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerCounterDataImageInitialize", rc));

  CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = enabled.get();
  config.configSize = config_.size();
  config.pConfig = config_.data();
  config.counterDataImageSize = counter_data.size();
  config.pCounterDataImage = counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_UserReplay;
  config.maxRangesPerPass = launches;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  if ((rc = cuptiRangeProfilerSetConfig(&config)) != CUPTI_SUCCESS) {
    // A CUPTI that refuses auto ranges replayed by the caller replays each kernel itself
    // (saving and restoring device memory around every pass): slower, the same counters.
    config.replayMode = CUPTI_KernelReplay;
    config.maxRangesPerPass = 1;
    CUptiResult retry = cuptiRangeProfilerSetConfig(&config);
    if (retry != CUPTI_SUCCESS)
      return make_error(describe("cuptiRangeProfilerSetConfig", rc) +
                        "; with kernel replay: " + describe("cuptiRangeProfilerSetConfig", retry));
    if (!kernel_replay_said_)
      std::fprintf(stderr, "kopt-sandbox: %s; using kernel replay\n",
                   describe("cuptiRangeProfilerSetConfig(user replay)", rc).c_str());
    kernel_replay_said_ = true;
  }

  timing_.setup_ms = ms_since(phase);
  phase = Clock::now();
  // One run of the plan per pass; CUPTI says when every pass has been submitted.
  bool all_submitted = false;
  for (size_t run = 0; run < passes_ + 2 && !all_submitted; ++run) {
    auto t0 = Clock::now();
    if (Status ready = before_pass(); !ready)
      return make_error("before a profiled run: " + ready.error());
    timing_.before_ms += ms_since(t0);
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = enabled.get();
    if ((rc = cuptiRangeProfilerStart(&start)) != CUPTI_SUCCESS)
      return make_error(describe("cuptiRangeProfilerStart", rc));
    auto t1 = Clock::now();
    Status ran = run_once();
    timing_.runs_ms += ms_since(t1);
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = enabled.get();
    rc = cuptiRangeProfilerStop(&stop);
    if (!ran) return make_error("the plan failed under the profiler: " + ran.error());
    if (rc != CUPTI_SUCCESS) return make_error(describe("cuptiRangeProfilerStop", rc));
    all_submitted = stop.isAllPassSubmitted != 0;
  }
  if (!all_submitted)
    return make_error("CUPTI wanted more than " + std::to_string(passes_ + 2) + " passes");
  timing_.passes_ms = ms_since(phase);
  phase = Clock::now();
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = enabled.get();
  if ((rc = cuptiRangeProfilerDecodeData(&decode)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerDecodeData", rc));
  if (decode.numOfRangeDropped > 0)
    return make_error(std::to_string(decode.numOfRangeDropped) + " profiled ranges were dropped");

  CUpti_RangeProfiler_GetCounterDataInfo_Params info{
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = counter_data.data();
  info.counterDataImageSize = counter_data.size();
  if ((rc = cuptiRangeProfilerGetCounterDataInfo(&info)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerGetCounterDataInfo", rc));
  if (info.numTotalRanges != launches)
    return make_error("the profiler saw " + std::to_string(info.numTotalRanges) +
                      " kernels where the plan launches " + std::to_string(launches));
  const auto& all = profile_metric_names();
  std::vector<RangeValues> ranges;
  for (size_t r = 0; r < info.numTotalRanges; ++r) {
    std::vector<double> values(names.size());
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = host_of(host_);
    eval.pCounterDataImage = counter_data.data();
    eval.counterDataImageSize = counter_data.size();
    eval.rangeIndex = r;
    eval.ppMetricNames = names.data();
    eval.numMetrics = names.size();
    eval.pMetricValues = values.data();
    if ((rc = cuptiProfilerHostEvaluateToGpuValues(&eval)) != CUPTI_SUCCESS)
      return make_error(describe("cuptiProfilerHostEvaluateToGpuValues", rc));
    RangeValues full(all.size(), 0.0);
    for (size_t i = 0, s = 0; i < all.size() && s < supported_.size(); ++i)
      if (all[i] == supported_[s]) full[i] = values[s++];
    ranges.push_back(std::move(full));
  }
  timing_.decode_ms = ms_since(phase);
  return ranges;
}

}  // namespace kopt::worker
