#include "sandbox/protocol.h"

#include <unistd.h>

#include <cmath>
#include <limits>

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

json options_to_json(const EvalOptions& o) {
  return {{"arch", o.arch},
          {"seed", o.seed},
          {"rounds", o.rounds},
          {"check_holdout", o.check_holdout},
          {"time", o.time},
          {"min_samples", o.min_samples},
          {"max_noise", o.max_noise},
          {"max_gpu_seconds", o.max_gpu_seconds},
          {"max_wall_seconds", o.max_wall_seconds},
          {"suspicious_speedup", o.suspicious_speedup},
          {"hang_factor", o.hang_factor},
          {"hang_floor_seconds", o.hang_floor_seconds},
          {"check_gpu_quiet", o.check_gpu_quiet},
          {"probe_tolerance", o.probe_tolerance},
          {"large_shape_rounds", o.large_shape_rounds},
          {"large_shape_bytes", o.large_shape_bytes},
          {"reuse_inputs", o.reuse_inputs},
          {"pool_sets", o.pool_sets},
          {"min_samples_long", o.min_samples_long},
          {"long_sample_ms", o.long_sample_ms},
          {"reuse_baseline_samples", o.reuse_baseline_samples},
          {"fresh_baseline_samples", o.fresh_baseline_samples},
          {"baseline_drift", o.baseline_drift},
          {"stress", o.stress},
          {"draws", o.draws},
          {"thresholds", o.thresholds},
          {"families", o.families},
          {"wide", o.wide},
          {"vary_constants", o.vary_constants},
          {"profile", o.profile},
          {"profile_below_us", o.profile_below_us},
          {"verify_budget_seconds", o.verify_budget_seconds}};
}

// The keys an "options" object may hold.
const std::vector<std::string>& option_keys() {
  static const std::vector<std::string> keys = {"arch",
                                                "seed",
                                                "rounds",
                                                "check_holdout",
                                                "time",
                                                "min_samples",
                                                "max_noise",
                                                "max_gpu_seconds",
                                                "max_wall_seconds",
                                                "suspicious_speedup",
                                                "hang_factor",
                                                "hang_floor_seconds",
                                                "check_gpu_quiet",
                                                "probe_tolerance",
                                                "large_shape_rounds",
                                                "large_shape_bytes",
                                                "reuse_inputs",
                                                "pool_sets",
                                                "profile",
                                                "profile_below_us",
                                                "min_samples_long",
                                                "long_sample_ms",
                                                "reuse_baseline_samples",
                                                "fresh_baseline_samples",
                                                "baseline_drift",
                                                "stress",
                                                "draws",
                                                "thresholds",
                                                "families",
                                                "wide",
                                                "vary_constants",
                                                "verify_budget_seconds"};
  return keys;
}

// Every field of `o` into `options`, in the protocol's order.
void read_option_fields(JsonReader& r, const json& o, const std::string& path,
                        EvalOptions& options) {
  read_into(r, o, path, "arch", options.arch);
  // The seed is a full 64-bit unsigned value; JsonReader's integers are signed.
  if (o.contains("seed")) {
    if (o.at("seed").is_number_unsigned()) {
      options.seed = o.at("seed").get<uint64_t>();
    } else {
      r.error(path + ".seed",
              "expected an unsigned integer, found " + json_type_name(o.at("seed").type()));
    }
  }
  read_into(r, o, path, "rounds", options.rounds);
  read_into(r, o, path, "check_holdout", options.check_holdout);
  read_into(r, o, path, "time", options.time);
  read_into(r, o, path, "min_samples", options.min_samples);
  read_into(r, o, path, "max_noise", options.max_noise);
  read_into(r, o, path, "max_gpu_seconds", options.max_gpu_seconds);
  read_into(r, o, path, "max_wall_seconds", options.max_wall_seconds);
  read_into(r, o, path, "suspicious_speedup", options.suspicious_speedup);
  read_into(r, o, path, "hang_factor", options.hang_factor);
  read_into(r, o, path, "hang_floor_seconds", options.hang_floor_seconds);
  read_into(r, o, path, "check_gpu_quiet", options.check_gpu_quiet);
  read_into(r, o, path, "probe_tolerance", options.probe_tolerance);
  read_into(r, o, path, "large_shape_rounds", options.large_shape_rounds);
  read_into(r, o, path, "large_shape_bytes", options.large_shape_bytes);
  read_into(r, o, path, "reuse_inputs", options.reuse_inputs);
  read_into(r, o, path, "pool_sets", options.pool_sets);
  read_into(r, o, path, "min_samples_long", options.min_samples_long);
  read_into(r, o, path, "long_sample_ms", options.long_sample_ms);
  read_into(r, o, path, "reuse_baseline_samples", options.reuse_baseline_samples);
  read_into(r, o, path, "fresh_baseline_samples", options.fresh_baseline_samples);
  read_into(r, o, path, "baseline_drift", options.baseline_drift);
  if (options.fresh_baseline_samples < 1)
    r.error(path + ".fresh_baseline_samples", "must be at least 1");
  if (!(options.baseline_drift >= 0)) r.error(path + ".baseline_drift", "must not be negative");
  read_into(r, o, path, "stress", options.stress);
  read_into(r, o, path, "draws", options.draws);
  read_into(r, o, path, "thresholds", options.thresholds);
  read_into(r, o, path, "families", options.families);
  read_into(r, o, path, "wide", options.wide);
  read_into(r, o, path, "vary_constants", options.vary_constants);
  read_into(r, o, path, "profile", options.profile);
  read_into(r, o, path, "profile_below_us", options.profile_below_us);
  read_into(r, o, path, "verify_budget_seconds", options.verify_budget_seconds);
}

// Ranges every option must stay in.
void check_option_ranges(JsonReader& r, const std::string& path, const EvalOptions& options) {
  if (!(options.verify_budget_seconds >= 0))
    r.error(path + ".verify_budget_seconds", "must not be negative");
  if (options.profile != "" && options.profile != "cupti" && options.profile != "bracket")
    r.error(path + ".profile", "expected \"\", \"cupti\" or \"bracket\"");
  if (options.pool_sets < 1) r.error(path + ".pool_sets", "must be at least 1");
  if (options.min_samples_long < 1) r.error(path + ".min_samples_long", "must be at least 1");
  if (!(options.long_sample_ms > 0)) r.error(path + ".long_sample_ms", "must be positive");
  if (options.large_shape_rounds < 1) r.error(path + ".large_shape_rounds", "must be at least 1");
  if (!(options.hang_factor >= 1)) r.error(path + ".hang_factor", "must be at least 1");
  if (!(options.hang_floor_seconds > 0)) r.error(path + ".hang_floor_seconds", "must be positive");
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

json timing_to_json(const TimingSummary& t) {
  return {{"median_us", number_to_json(t.median_us)},
          {"noise", number_to_json(t.noise)},
          {"min_us", number_to_json(t.min_us)},
          {"samples", t.samples},
          {"discarded", t.discarded}};
}

TimingSummary timing_from_json(JsonReader& r, const json& o, const std::string& path) {
  TimingSummary t;
  r.check_keys(o, path, {"median_us", "noise", "min_us", "samples", "discarded"});
  read_into(r, o, path, "median_us", t.median_us);
  read_into(r, o, path, "noise", t.noise);
  read_into(r, o, path, "min_us", t.min_us);
  read_into(r, o, path, "samples", t.samples);
  read_into(r, o, path, "discarded", t.discarded);
  return t;
}

json mismatch_to_json(const Mismatch& m) {
  return {{"output", m.output},
          {"shape", m.shape},
          {"index", m.index},
          {"expected", number_to_json(m.expected)},
          {"actual", number_to_json(m.actual)},
          {"round", m.round},
          {"phase", m.phase},
          {"stress", m.stress}};
}

Mismatch mismatch_from_json(JsonReader& r, const json& o, const std::string& path) {
  Mismatch m;
  r.check_keys(o, path,
               {"output", "shape", "index", "expected", "actual", "round", "phase", "stress"});
  read_into(r, o, path, "output", m.output);
  read_into(r, o, path, "shape", m.shape);
  read_into(r, o, path, "index", m.index);
  read_into(r, o, path, "expected", m.expected);
  read_into(r, o, path, "actual", m.actual);
  read_into(r, o, path, "round", m.round);
  read_into(r, o, path, "phase", m.phase);
  read_into(r, o, path, "stress", m.stress);
  return m;
}

// Reads an optional sub-object with `parse` when present.
template <typename T, typename Parse>
std::optional<T> optional_object(JsonReader& r, const json& o, const std::string& path,
                                 const std::string& key, Parse parse) {
  const json* sub = r.typed_field(o, path, key, json::value_t::object, false);
  if (!sub) return std::nullopt;
  return parse(r, *sub, path + "." + key);
}

}  // namespace

json resources_to_json(const KernelResources& k) {
  return {{"registers", k.registers},
          {"local_bytes", k.local_bytes},
          {"static_shared_bytes", k.static_shared_bytes},
          {"dynamic_shared_bytes", k.dynamic_shared_bytes},
          {"occupancy", number_to_json(k.occupancy)}};
}

KernelResources resources_from_json(JsonReader& r, const json& o, const std::string& path) {
  KernelResources k;
  read_into(r, o, path, "registers", k.registers);
  read_into(r, o, path, "local_bytes", k.local_bytes);
  read_into(r, o, path, "static_shared_bytes", k.static_shared_bytes);
  read_into(r, o, path, "dynamic_shared_bytes", k.dynamic_shared_bytes);
  read_into(r, o, path, "occupancy", k.occupancy);
  return k;
}

namespace {

// The worker's answer holds nothing but the resources' own keys.
KernelResources answer_resources_from_json(JsonReader& r, const json& o, const std::string& path) {
  r.check_keys(
      o, path,
      {"registers", "local_bytes", "static_shared_bytes", "dynamic_shared_bytes", "occupancy"});
  return resources_from_json(r, o, path);
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
            {"total_ms", number_to_json(result.total_ms)}};
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
                        "profile_note",      "image_sha256",  "phases"});
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
