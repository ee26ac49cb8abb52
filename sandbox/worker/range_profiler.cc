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

std::string with_permission_help(std::string why, CUptiResult rc) {
  return why + (is_permission_error(rc) ? std::string(": ") + kPermissionHelp : "");
}

Result<std::string> chip_name(int device_ordinal) {
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = size_t(device_ordinal);
  if (CUptiResult rc = cuptiDeviceGetChipName(&chip); rc != CUPTI_SUCCESS)
    return make_error(describe("cuptiDeviceGetChipName", rc));
  return std::string(chip.pChipName);
}

// Counter availability needs the profiler enabled on the context; it is also where a missing
// permission shows first.
Result<std::vector<uint8_t>> counter_availability(CUcontext context) {
  std::vector<uint8_t> availability;
  EnabledProfiler enabled(context);
  if (enabled.status() != CUPTI_SUCCESS)
    return make_error(with_permission_help(describe("cuptiRangeProfilerEnable", enabled.status()),
                                           enabled.status()));
  CUpti_Profiler_GetCounterAvailability_Params a{
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  a.ctx = context;
  CUptiResult rc;
  if ((rc = cuptiProfilerGetCounterAvailability(&a)) != CUPTI_SUCCESS)
    return make_error(
        with_permission_help(describe("cuptiProfilerGetCounterAvailability", rc), rc));
  availability.resize(a.counterAvailabilityImageSize);
  a.pCounterAvailabilityImage = availability.data();
  if ((rc = cuptiProfilerGetCounterAvailability(&a)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerGetCounterAvailability", rc));
  return availability;
}

Result<CUpti_Profiler_Host_Object*> initialize_host(const std::string& chip,
                                                    std::vector<uint8_t>& availability) {
  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.c_str();
  host.pCounterAvailabilityImage = availability.data();
  if (CUptiResult rc = cuptiProfilerHostInitialize(&host); rc != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerHostInitialize", rc) + " for chip " + chip);
  return host.pHostObject;
}

// Metrics this chip lacks (gmma stalls before Hopper) are left out and read as 0.
Status add_supported_metrics(CUpti_Profiler_Host_Object* host,
                             std::vector<std::string>& supported) {
  auto known = base_metrics(host);
  for (const auto& name : profile_metric_names())
    if (known.count(name.substr(0, name.find('.')))) supported.push_back(name);
  auto names = c_names(supported);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  if (CUptiResult rc = cuptiProfilerHostConfigAddMetrics(&add); rc != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerHostConfigAddMetrics", rc));
  return ok_status();
}

// The config image of the metrics added, and how many replay passes it needs.
Status write_config_image(CUpti_Profiler_Host_Object* host, std::vector<uint8_t>& config,
                          size_t& passes_needed) {
  CUptiResult rc;
  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host;
  if ((rc = cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerHostGetConfigImageSize", rc));
  config.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  if ((rc = cuptiProfilerHostGetConfigImage(&image)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerHostGetConfigImage", rc));
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = config.size();
  passes.pConfigImage = config.data();
  if ((rc = cuptiProfilerHostGetNumOfPasses(&passes)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiProfilerHostGetNumOfPasses", rc));
  passes_needed = passes.numOfPasses;
  return ok_status();
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The counter data image for `launches` ranges of `names`, initialised in `counter_data`.
Status init_counter_data(CUpti_RangeProfiler_Object* profiler, std::vector<const char*>& names,
                         size_t launches, std::vector<uint8_t>& counter_data) {
  CUpti_RangeProfiler_GetCounterDataSize_Params size{
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = profiler;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = launches;
  size.maxNumRangeTreeNodes = uint32_t(launches);
  CUptiResult rc = cuptiRangeProfilerGetCounterDataSize(&size);
  if (rc != CUPTI_SUCCESS) return make_error(describe("cuptiRangeProfilerGetCounterDataSize", rc));
  counter_data.resize(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = profiler;
  init.counterDataSize = counter_data.size();
  init.pCounterData = counter_data.data();
  if ((rc = cuptiRangeProfilerCounterDataImageInitialize(&init)) != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerCounterDataImageInitialize", rc));
  return ok_status();
}

// Auto ranges replayed by the caller; `kernel_replay_said` keeps the fallback's note to once.
Status set_config(CUpti_RangeProfiler_Object* profiler, std::vector<uint8_t>& config_image,
                  std::vector<uint8_t>& counter_data, size_t launches, bool& kernel_replay_said) {
  CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = profiler;
  config.configSize = config_image.size();
  config.pConfig = config_image.data();
  config.counterDataImageSize = counter_data.size();
  config.pCounterDataImage = counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_UserReplay;
  config.maxRangesPerPass = launches;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  CUptiResult rc = cuptiRangeProfilerSetConfig(&config);
  if (rc == CUPTI_SUCCESS) return ok_status();
  // A CUPTI that refuses auto ranges replayed by the caller replays each kernel itself
  // (saving and restoring device memory around every pass): slower, the same counters.
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = 1;
  CUptiResult retry = cuptiRangeProfilerSetConfig(&config);
  if (retry != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerSetConfig", rc) +
                      "; with kernel replay: " + describe("cuptiRangeProfilerSetConfig", retry));
  if (!kernel_replay_said)
    std::fprintf(stderr, "kopt-sandbox: %s; using kernel replay\n",
                 describe("cuptiRangeProfilerSetConfig(user replay)", rc).c_str());
  kernel_replay_said = true;
  return ok_status();
}

// One run of the plan per pass; CUPTI says when every pass has been submitted.
Status run_passes(CUpti_RangeProfiler_Object* profiler, size_t passes,
                  const std::function<Status()>& before_pass,
                  const std::function<Status()>& run_once, RangeProfiler::Timing& timing) {
  CUptiResult rc;
  bool all_submitted = false;
  for (size_t run = 0; run < passes + 2 && !all_submitted; ++run) {
    auto t0 = Clock::now();
    if (Status ready = before_pass(); !ready)
      return make_error("before a profiled run: " + ready.error());
    timing.before_ms += ms_since(t0);
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = profiler;
    if ((rc = cuptiRangeProfilerStart(&start)) != CUPTI_SUCCESS)
      return make_error(describe("cuptiRangeProfilerStart", rc));
    auto t1 = Clock::now();
    Status ran = run_once();
    timing.runs_ms += ms_since(t1);
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = profiler;
    rc = cuptiRangeProfilerStop(&stop);
    if (!ran) return make_error("the plan failed under the profiler: " + ran.error());
    if (rc != CUPTI_SUCCESS) return make_error(describe("cuptiRangeProfilerStop", rc));
    all_submitted = stop.isAllPassSubmitted != 0;
  }
  if (!all_submitted)
    return make_error("CUPTI wanted more than " + std::to_string(passes + 2) + " passes");
  return ok_status();
}

// Decodes the passes and evaluates each range's metrics, in profile_metric_names() order (a
// metric the chip lacks reads 0).
Result<std::vector<RangeValues>> decode_ranges(CUpti_RangeProfiler_Object* profiler,
                                               CUpti_Profiler_Host_Object* host,
                                               std::vector<uint8_t>& counter_data,
                                               std::vector<const char*>& names,
                                               const std::vector<std::string>& supported,
                                               size_t launches) {
  CUptiResult rc;
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = profiler;
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
    eval.pHostObject = host;
    eval.pCounterDataImage = counter_data.data();
    eval.counterDataImageSize = counter_data.size();
    eval.rangeIndex = r;
    eval.ppMetricNames = names.data();
    eval.numMetrics = names.size();
    eval.pMetricValues = values.data();
    if ((rc = cuptiProfilerHostEvaluateToGpuValues(&eval)) != CUPTI_SUCCESS)
      return make_error(describe("cuptiProfilerHostEvaluateToGpuValues", rc));
    RangeValues full(all.size(), 0.0);
    for (size_t i = 0, s = 0; i < all.size() && s < supported.size(); ++i)
      if (all[i] == supported[s]) full[i] = values[s++];
    ranges.push_back(std::move(full));
  }
  return ranges;
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
    return refuse(with_permission_help(describe("cuptiProfilerInitialize", rc), rc));
  std::unique_ptr<RangeProfiler> self(new RangeProfiler());
  self->context_ = context;
  auto chip = chip_name(device_ordinal);
  if (!chip) return refuse(chip.error());
  self->chip_ = *chip;
  auto availability = counter_availability(context);
  if (!availability) return refuse(availability.error());
  auto host = initialize_host(self->chip_, *availability);
  if (!host) return refuse(host.error());
  self->host_ = *host;  // from here on the destructor deinitialises it
  if (Status added = add_supported_metrics(*host, self->supported_); !added)
    return refuse(added.error());
  if (Status image = write_config_image(*host, self->config_, self->passes_); !image)
    return refuse(image.error());
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
  auto phase = Clock::now();
  timing_ = Timing{};
  EnabledProfiler enabled(context_);
  if (enabled.status() != CUPTI_SUCCESS)
    return make_error(describe("cuptiRangeProfilerEnable", enabled.status()));
  auto names = c_names(supported_);
  std::vector<uint8_t> counter_data;
  if (Status s = init_counter_data(enabled.get(), names, launches, counter_data); !s)
    return make_error(s.error());
  if (Status s = set_config(enabled.get(), config_, counter_data, launches, kernel_replay_said_);
      !s)
    return make_error(s.error());
  timing_.setup_ms = ms_since(phase);

  phase = Clock::now();
  if (Status s = run_passes(enabled.get(), passes_, before_pass, run_once, timing_); !s)
    return make_error(s.error());
  timing_.passes_ms = ms_since(phase);

  phase = Clock::now();
  auto ranges =
      decode_ranges(enabled.get(), host_of(host_), counter_data, names, supported_, launches);
  if (!ranges) return make_error(ranges.error());
  timing_.decode_ms = ms_since(phase);
  return ranges;
}

}  // namespace kopt::worker
