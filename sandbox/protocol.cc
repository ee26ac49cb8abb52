#include "sandbox/protocol.h"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "common/json_limits.h"
#include "common/json_reader.h"

namespace kopt {

using nlohmann::json;

namespace {

// JSON has no NaN or Inf; nlohmann would write them as null and lose the fact that an output
// element was NaN, which is exactly what a mismatch report must show.
json number_to_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::optional<double> read_number(JsonReader& reader, const json& object, const std::string& path,
                                  const std::string& key) {
  if (!object.contains(key)) return std::nullopt;
  const json& v = object.at(key);
  if (v.is_string()) {
    const auto& text = v.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    reader.error(path + "." + key, "expected a number, \"nan\", \"inf\" or \"-inf\"");
    return std::nullopt;
  }
  return reader.number_field(object, path, key, false);
}

// Optional fields keep the struct's default when absent; present fields must have the right type.
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               double& out) {
  if (auto v = read_number(r, o, path, key)) out = *v;
}
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               int& out) {
  auto v = r.integer_field(o, path, key, false);
  if (!v) return;
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
    r.error(path + "." + key, "out of range");
    return;
  }
  out = static_cast<int>(*v);
}
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               int64_t& out) {
  if (auto v = r.integer_field(o, path, key, false)) out = *v;
}
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               bool& out) {
  if (auto v = r.bool_field(o, path, key, false)) out = *v;
}
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               std::string& out) {
  if (auto v = r.string_field(o, path, key, false)) out = *v;
}
// A full 64-bit unsigned value (the seed); JsonReader's integers are signed.
void read_into(JsonReader& r, const json& o, const std::string& path, const std::string& key,
               uint64_t& out) {
  if (!o.contains(key)) return;
  if (o.at(key).is_number_unsigned()) {
    out = o.at(key).get<uint64_t>();
  } else {
    r.error(path + "." + key,
            "expected an unsigned integer, found " + json_type_name(o.at(key).type()));
  }
}

// ---- requests ----

json source_to_json(const KernelSource& source) {
  json j = {{"source", source.source}, {"origin", source.origin}};
  if (!source.tunables.empty()) j["tunables"] = source.tunables;
  return j;
}

KernelSource source_from_json(JsonReader& r, const json& o, const std::string& path) {
  KernelSource source;
  r.check_keys(o, path, {"source", "origin", "tunables"});
  if (auto text = r.string_field(o, path, "source", true)) source.source = *text;
  read_into(r, o, path, "origin", source.origin);
  if (const json* tunables = r.typed_field(o, path, "tunables", json::value_t::object, false)) {
    for (const auto& [name, value] : tunables->items()) {
      if (auto v = r.integer_field(*tunables, path + ".tunables", name, true)) {
        source.tunables[name] = *v;
      }
    }
  }
  return source;
}

// A member of a protocol record and its JSON key (the member's name). A record's fields, listed
// once, are what its *_to_json writes and its *_from_json accepts and reads.
template <typename Record, typename T>
struct Field {
  const char* key;
  T Record::*member;
};
template <typename Record, typename T>
Field(const char*, T Record::*) -> Field<Record, T>;

json field_json(double value) { return number_to_json(value); }
template <typename T>
json field_json(const T& value) {
  return value;
}

template <typename Record, typename Fields>
json fields_to_json(const Record& record, const Fields& fields) {
  json j = json::object();
  std::apply([&](const auto&... f) { ((j[f.key] = field_json(record.*f.member)), ...); }, fields);
  return j;
}

template <typename Fields>
std::vector<std::string> field_keys(const Fields& fields) {
  std::vector<std::string> keys;
  std::apply([&](const auto&... f) { (keys.emplace_back(f.key), ...); }, fields);
  return keys;
}

// Each field present in `o` into `record`, in the list's order; absent ones keep their default.
template <typename Record, typename Fields>
void read_fields(JsonReader& r, const json& o, const std::string& path, const Fields& fields,
                 Record& record) {
  std::apply([&](const auto&... f) { (read_into(r, o, path, f.key, record.*f.member), ...); },
             fields);
}

// A record from an object that may hold nothing but its fields.
template <typename Record, typename Fields>
Record record_from_json(JsonReader& r, const json& o, const std::string& path,
                        const Fields& fields) {
  Record record;
  r.check_keys(o, path, field_keys(fields));
  read_fields(r, o, path, fields, record);
  return record;
}

// Every option, in the protocol's order: options_to_json writes, option_keys accepts and
// read_option_fields reads this one list.
constexpr std::tuple kOptionFields{
    Field{"arch", &EvalOptions::arch},
    Field{"seed", &EvalOptions::seed},
    Field{"rounds", &EvalOptions::rounds},
    Field{"check_holdout", &EvalOptions::check_holdout},
    Field{"time", &EvalOptions::time},
    Field{"min_samples", &EvalOptions::min_samples},
    Field{"max_noise", &EvalOptions::max_noise},
    Field{"max_gpu_seconds", &EvalOptions::max_gpu_seconds},
    Field{"max_wall_seconds", &EvalOptions::max_wall_seconds},
    Field{"suspicious_speedup", &EvalOptions::suspicious_speedup},
    Field{"hang_factor", &EvalOptions::hang_factor},
    Field{"hang_floor_seconds", &EvalOptions::hang_floor_seconds},
    Field{"hang_ceiling_seconds", &EvalOptions::hang_ceiling_seconds},
    Field{"check_gpu_quiet", &EvalOptions::check_gpu_quiet},
    Field{"exact_allocations", &EvalOptions::exact_allocations},
    Field{"probe_tolerance", &EvalOptions::probe_tolerance},
    Field{"large_shape_rounds", &EvalOptions::large_shape_rounds},
    Field{"large_shape_bytes", &EvalOptions::large_shape_bytes},
    Field{"reuse_inputs", &EvalOptions::reuse_inputs},
    Field{"pool_sets", &EvalOptions::pool_sets},
    Field{"min_samples_long", &EvalOptions::min_samples_long},
    Field{"long_sample_ms", &EvalOptions::long_sample_ms},
    Field{"reuse_baseline_samples", &EvalOptions::reuse_baseline_samples},
    Field{"fresh_baseline_samples", &EvalOptions::fresh_baseline_samples},
    Field{"baseline_drift", &EvalOptions::baseline_drift},
    Field{"stress", &EvalOptions::stress},
    Field{"draws", &EvalOptions::draws},
    Field{"thresholds", &EvalOptions::thresholds},
    Field{"families", &EvalOptions::families},
    Field{"wide", &EvalOptions::wide},
    Field{"vary_constants", &EvalOptions::vary_constants},
    Field{"corun", &EvalOptions::corun},
    Field{"profile", &EvalOptions::profile},
    Field{"profile_below_us", &EvalOptions::profile_below_us},
    Field{"full_gate_below_us", &EvalOptions::full_gate_below_us},
    Field{"screen_time_first", &EvalOptions::screen_time_first},
    Field{"verify_budget_seconds", &EvalOptions::verify_budget_seconds},
};

json options_to_json(const EvalOptions& o) { return fields_to_json(o, kOptionFields); }

// The keys an "options" object may hold.
const std::vector<std::string>& option_keys() {
  static const std::vector<std::string> keys = field_keys(kOptionFields);
  return keys;
}

// Every field of `o` into `options`, in the protocol's order.
void read_option_fields(JsonReader& r, const json& o, const std::string& path,
                        EvalOptions& options) {
  read_fields(r, o, path, kOptionFields, options);
  if (options.fresh_baseline_samples < 1)
    r.error(path + ".fresh_baseline_samples", "must be at least 1");
  if (!(options.baseline_drift >= 0)) r.error(path + ".baseline_drift", "must not be negative");
}

// Ranges every option must stay in.
void check_option_ranges(JsonReader& r, const std::string& path, const EvalOptions& options) {
  if (!(options.verify_budget_seconds >= 0))
    r.error(path + ".verify_budget_seconds", "must not be negative");
  if (!(options.full_gate_below_us >= 0) || !std::isfinite(options.full_gate_below_us))
    r.error(path + ".full_gate_below_us", "must be a finite number, not negative");
  if (options.profile != "" && options.profile != "cupti" && options.profile != "bracket")
    r.error(path + ".profile", "expected \"\", \"cupti\" or \"bracket\"");
  if (options.pool_sets < 1) r.error(path + ".pool_sets", "must be at least 1");
  if (options.min_samples_long < 1) r.error(path + ".min_samples_long", "must be at least 1");
  if (!(options.long_sample_ms > 0)) r.error(path + ".long_sample_ms", "must be positive");
  if (options.large_shape_rounds < 1) r.error(path + ".large_shape_rounds", "must be at least 1");
  if (!(options.hang_factor >= 1)) r.error(path + ".hang_factor", "must be at least 1");
  if (!(options.hang_floor_seconds > 0)) r.error(path + ".hang_floor_seconds", "must be positive");
  if (!(options.hang_ceiling_seconds >= 0))
    r.error(path + ".hang_ceiling_seconds", "must be 0 (none) or positive");
  if (!(options.probe_tolerance > 0)) r.error(path + ".probe_tolerance", "must be positive");
  if (options.rounds < 1) r.error(path + ".rounds", "must be at least 1");
  if (options.min_samples < 1) r.error(path + ".min_samples", "must be at least 1");
  if (!(options.max_wall_seconds > 0)) r.error(path + ".max_wall_seconds", "must be positive");
}

EvalOptions options_from_json(JsonReader& r, const json& o, const std::string& path) {
  EvalOptions options;
  r.check_keys(o, path, option_keys());
  read_option_fields(r, o, path, options);
  check_option_ranges(r, path, options);
  return options;
}

// ---- results ----

constexpr std::tuple kTimingFields{
    Field{"median_us", &TimingSummary::median_us}, Field{"noise", &TimingSummary::noise},
    Field{"min_us", &TimingSummary::min_us},       Field{"samples", &TimingSummary::samples},
    Field{"discarded", &TimingSummary::discarded},
};

json timing_to_json(const TimingSummary& t) { return fields_to_json(t, kTimingFields); }

TimingSummary timing_from_json(JsonReader& r, const json& o, const std::string& path) {
  return record_from_json<TimingSummary>(r, o, path, kTimingFields);
}

constexpr std::tuple kMismatchFields{
    Field{"output", &Mismatch::output}, Field{"shape", &Mismatch::shape},
    Field{"index", &Mismatch::index},   Field{"expected", &Mismatch::expected},
    Field{"actual", &Mismatch::actual}, Field{"round", &Mismatch::round},
    Field{"phase", &Mismatch::phase},   Field{"stress", &Mismatch::stress},
};

json mismatch_to_json(const Mismatch& m) { return fields_to_json(m, kMismatchFields); }

Mismatch mismatch_from_json(JsonReader& r, const json& o, const std::string& path) {
  return record_from_json<Mismatch>(r, o, path, kMismatchFields);
}

constexpr std::tuple kResourceFields{
    Field{"registers", &KernelResources::registers},
    Field{"local_bytes", &KernelResources::local_bytes},
    Field{"static_shared_bytes", &KernelResources::static_shared_bytes},
    Field{"dynamic_shared_bytes", &KernelResources::dynamic_shared_bytes},
    Field{"occupancy", &KernelResources::occupancy},
};

// Reads an optional sub-object with `parse` when present.
template <typename T, typename Parse>
std::optional<T> optional_object(JsonReader& r, const json& o, const std::string& path,
                                 const std::string& key, Parse parse) {
  const json* sub = r.typed_field(o, path, key, json::value_t::object, false);
  if (!sub) return std::nullopt;
  return parse(r, *sub, path + "." + key);
}

}  // namespace

json resources_to_json(const KernelResources& k) { return fields_to_json(k, kResourceFields); }

KernelResources resources_from_json(JsonReader& r, const json& o, const std::string& path) {
  KernelResources k;
  read_fields(r, o, path, kResourceFields, k);
  return k;
}

namespace {

// The worker's answer holds nothing but the resources' own keys.
KernelResources answer_resources_from_json(JsonReader& r, const json& o, const std::string& path) {
  return record_from_json<KernelResources>(r, o, path, kResourceFields);
}

}  // namespace

json to_json(const EvalRequest& request) {
  json j = {{"task_json", request.task_json},
            {"reference", source_to_json(request.reference)},
            {"candidate", source_to_json(request.candidate)},
            {"options", options_to_json(request.options)}};
  if (request.baseline) j["baseline"] = source_to_json(*request.baseline);
  return j;
}

Result<EvalOptions> eval_options_from_json(const json& j, const std::string& path) {
  JsonReader r("sandbox request");
  if (!j.is_object()) return make_error("sandbox request: " + path + ": expected an object");
  EvalOptions options = options_from_json(r, j, path);
  if (!r.ok()) return make_error(r.message());
  return options;
}

Result<EvalRequest> eval_request_from_json(const json& j) {
  JsonReader r("sandbox request");
  if (!j.is_object()) return make_error("sandbox request: $: expected an object");
  EvalRequest request;
  r.check_keys(j, "$",
               {"v", "id", "op", "task_json", "reference", "baseline", "candidate", "options"});
  if (auto text = r.string_field(j, "$", "task_json", true)) request.task_json = *text;
  if (const json* o = r.typed_field(j, "$", "reference", json::value_t::object, true)) {
    request.reference = source_from_json(r, *o, "$.reference");
  }
  if (const json* o = r.typed_field(j, "$", "candidate", json::value_t::object, true)) {
    request.candidate = source_from_json(r, *o, "$.candidate");
  }
  request.baseline = optional_object<KernelSource>(r, j, "$", "baseline", source_from_json);
  if (auto options = optional_object<EvalOptions>(r, j, "$", "options", options_from_json)) {
    request.options = *options;
  }
  if (!r.ok()) return make_error(r.message());
  return request;
}

json to_json(const EvalResult& result) {
  json j = {{"verdict", verdict_name(result.verdict)},
            {"detail", result.detail},
            {"compile_log", result.compile_log},
            {"compile_ms", number_to_json(result.compile_ms)},
            {"compile_cache_hit", result.compile_cache_hit},
            {"image_sha256", result.image_sha256},
            {"speedup", number_to_json(result.speedup)},
            {"sol_us", number_to_json(result.sol_us)},
            {"sol_percent", number_to_json(result.sol_percent)},
            {"verify_ms", number_to_json(result.verify_ms)},
            {"time_ms", number_to_json(result.time_ms)},
            {"total_ms", number_to_json(result.total_ms)},
            {"shapes_verified", result.shapes_verified}};
  if (result.mismatch) j["mismatch"] = mismatch_to_json(*result.mismatch);
  if (result.candidate_time) j["candidate_time"] = timing_to_json(*result.candidate_time);
  if (result.baseline_time) j["baseline_time"] = timing_to_json(*result.baseline_time);
  if (result.resources) j["resources"] = resources_to_json(*result.resources);
  if (!result.device.is_null()) j["device"] = result.device;
  if (!result.gpu_check.is_null()) j["gpu_check"] = result.gpu_check;
  if (!result.verify_phases.is_null()) j["verify_phases"] = result.verify_phases;
  if (!result.timing_facts.is_null()) j["timing_facts"] = result.timing_facts;
  if (!result.phases.is_null()) j["phases"] = result.phases;
  if (result.profile) j["profile"] = to_json(*result.profile);
  if (!result.profile_note.empty()) j["profile_note"] = result.profile_note;
  return j;
}

Result<EvalResult> eval_result_from_json(const json& j) {
  JsonReader r("sandbox result");
  if (!j.is_object()) return make_error("sandbox result: $: expected an object");
  EvalResult result;
  r.check_keys(j, "$", {"verdict",           "detail",        "compile_log",    "compile_ms",
                        "compile_cache_hit", "mismatch",      "candidate_time", "baseline_time",
                        "resources",         "speedup",       "sol_us",         "sol_percent",
                        "verify_ms",         "time_ms",       "total_ms",       "device",
                        "gpu_check",         "verify_phases", "timing_facts",   "profile",
                        "profile_note",      "image_sha256",  "phases",         "shapes_verified"});
  if (auto name = r.string_field(j, "$", "verdict", true)) {
    if (auto verdict = parse_verdict(*name)) {
      result.verdict = *verdict;
    } else {
      r.error("$.verdict", "unknown verdict '" + *name + "'");
    }
  }
  read_into(r, j, "$", "detail", result.detail);
  read_into(r, j, "$", "compile_log", result.compile_log);
  read_into(r, j, "$", "compile_ms", result.compile_ms);
  read_into(r, j, "$", "compile_cache_hit", result.compile_cache_hit);
  read_into(r, j, "$", "image_sha256", result.image_sha256);
  result.mismatch = optional_object<Mismatch>(r, j, "$", "mismatch", mismatch_from_json);
  result.candidate_time =
      optional_object<TimingSummary>(r, j, "$", "candidate_time", timing_from_json);
  result.baseline_time =
      optional_object<TimingSummary>(r, j, "$", "baseline_time", timing_from_json);
  result.resources =
      optional_object<KernelResources>(r, j, "$", "resources", answer_resources_from_json);
  read_into(r, j, "$", "speedup", result.speedup);
  read_into(r, j, "$", "sol_us", result.sol_us);
  read_into(r, j, "$", "sol_percent", result.sol_percent);
  read_into(r, j, "$", "verify_ms", result.verify_ms);
  read_into(r, j, "$", "time_ms", result.time_ms);
  read_into(r, j, "$", "total_ms", result.total_ms);
  read_into(r, j, "$", "shapes_verified", result.shapes_verified);
  if (j.contains("device")) result.device = j.at("device");
  if (j.contains("gpu_check")) result.gpu_check = j.at("gpu_check");
  if (j.contains("verify_phases")) result.verify_phases = j.at("verify_phases");
  if (j.contains("timing_facts")) result.timing_facts = j.at("timing_facts");
  if (j.contains("phases")) result.phases = j.at("phases");
  read_into(r, j, "$", "profile_note", result.profile_note);
  if (const json* p = r.typed_field(j, "$", "profile", json::value_t::object, false)) {
    auto profile = kernel_profile_from_json(*p, "$.profile");
    if (profile)
      result.profile = std::move(*profile);
    else
      r.error("$.profile", profile.error());
  }
  if (!r.ok()) return make_error(r.message());
  return result;
}

json make_request(int64_t id, const std::string& op) {
  return {{"v", kProtocolVersion}, {"id", id}, {"op", op}};
}

json make_response(int64_t id, bool ok) {
  return {{"v", kProtocolVersion}, {"id", id}, {"ok", ok}};
}

json make_hello() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  json hello = make_response(0, true);
  hello["hello"] = {{"pid", static_cast<int64_t>(::getpid())}, {"host", std::string(host)}};
  return hello;
}

bool is_hello(const json& body) {
  return body.is_object() && body.contains("hello") && body.at("hello").is_object();
}

std::string encode_line(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Message> parse_message(const std::string& line) {
  json j = parse_json_bounded(line);
  if (j.is_discarded()) return make_error("not JSON");
  if (!j.is_object()) return make_error("not a JSON object");
  if (!j.contains("v") || !j.at("v").is_number_integer()) {
    return make_error("no integer protocol version \"v\"");
  }
  if (!j.contains("id") || !j.at("id").is_number_integer()) {
    return make_error("no integer \"id\"");
  }
  Message message;
  message.version = j.at("v").get<int>();
  message.id = j.at("id").get<int64_t>();
  message.body = std::move(j);
  return message;
}

}  // namespace kopt
