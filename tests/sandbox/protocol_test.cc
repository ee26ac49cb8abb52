#include "sandbox/protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kopt {
namespace {

using nlohmann::json;

EvalRequest full_request() {
  EvalRequest request;
  request.task_json = R"({"format": 1, "name": "axpy"})";
  request.reference = {"extern \"C\" __global__ void ref() {}\n", "tasks/axpy/reference.cu", {}};
  request.baseline = KernelSource{"// baseline\n", "tasks/axpy/baseline.cu", {{"BLOCK", 256}}};
  request.candidate = {"// candidate \"quoted\"\n\ttab\n", "cand.cu", {{"BLOCK", 512}, {"V", 4}}};
  request.options.arch = "sm_90a";
  request.options.seed = 0xfedcba9876543210ull;  // above 2^63: must survive as unsigned
  request.options.rounds = 7;
  request.options.check_holdout = false;
  request.options.time = false;
  request.options.min_samples = 20;
  request.options.max_noise = 0.01;
  request.options.max_gpu_seconds = 1.5;
  request.options.max_wall_seconds = 30;
  request.options.hang_ceiling_seconds = 80;
  request.options.suspicious_speedup = 8;
  request.options.reuse_inputs = false;
  request.options.exact_allocations = true;
  request.options.pool_sets = 6;
  request.options.stress = false;
  request.options.min_samples_long = 4;
  request.options.long_sample_ms = 25;
  request.options.full_gate_below_us = 123.5;
  request.options.screen_time_first = true;
  return request;
}

EvalResult full_result() {
  EvalResult result;
  result.verdict = Verdict::kIncorrect;
  result.detail = "out[17] = nan, expected 1.25";
  result.compile_log = "warning: unused variable\n";
  result.compile_ms = 21.5;
  result.compile_cache_hit = true;
  result.mismatch = Mismatch{"out", "n=1023", 17, 1.25, std::nan(""), 3, "timing", "std 40"};
  result.candidate_time = TimingSummary{301.5, 0.004, 299.0, 42, 2};
  result.baseline_time = TimingSummary{310.25, 0.003, 305.0, 40, 0};
  result.resources = KernelResources{32, 8, 1024, 4096, 0.75};
  result.speedup = 1.029;
  result.sol_us = 240.5;
  result.sol_percent = 79.8;
  result.verify_ms = 120;
  result.time_ms = 450;
  result.total_ms = 600;
  result.shapes_verified = 7;
  result.device = {{"name", "NVIDIA H100 80GB HBM3"}, {"sms", 132}};
  return result;
}

// Through text, as on the wire.
json over_the_wire(const json& j) { return json::parse(encode_line(j)); }

TEST(Protocol, RequestRoundTripsEveryField) {
  EvalRequest in = full_request();
  auto out = eval_request_from_json(over_the_wire(to_json(in)));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->task_json, in.task_json);
  EXPECT_EQ(out->reference.source, in.reference.source);
  EXPECT_EQ(out->reference.origin, in.reference.origin);
  EXPECT_TRUE(out->reference.tunables.empty());
  ASSERT_TRUE(out->baseline.has_value());
  EXPECT_EQ(out->baseline->tunables, in.baseline->tunables);
  EXPECT_EQ(out->candidate.source, in.candidate.source);
  EXPECT_EQ(out->candidate.tunables, in.candidate.tunables);
  EXPECT_EQ(out->options.arch, "sm_90a");
  EXPECT_EQ(out->options.seed, 0xfedcba9876543210ull);
  EXPECT_EQ(out->options.rounds, 7);
  EXPECT_FALSE(out->options.check_holdout);
  EXPECT_FALSE(out->options.time);
  EXPECT_EQ(out->options.min_samples, 20);
  EXPECT_EQ(out->options.max_noise, 0.01);
  EXPECT_EQ(out->options.max_gpu_seconds, 1.5);
  EXPECT_FALSE(out->options.reuse_inputs);
  EXPECT_TRUE(out->options.exact_allocations);
  EXPECT_EQ(out->options.pool_sets, 6);
  EXPECT_EQ(out->options.min_samples_long, 4);
  EXPECT_EQ(out->options.long_sample_ms, 25);
  EXPECT_EQ(out->options.max_wall_seconds, 30);
  EXPECT_EQ(out->options.hang_ceiling_seconds, 80);
  EXPECT_EQ(out->options.suspicious_speedup, 8);
  EXPECT_FALSE(out->options.stress);
  EXPECT_EQ(out->options.full_gate_below_us, 123.5);
  EXPECT_TRUE(out->options.screen_time_first);
}

TEST(Protocol, RequestWithoutBaselineOrOptionsUsesDefaults) {
  EvalRequest in;
  in.task_json = "{}";
  in.reference.source = "r";
  in.candidate.source = "c";
  json j = to_json(in);
  EXPECT_FALSE(j.contains("baseline"));
  j.erase("options");
  auto out = eval_request_from_json(j);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->baseline.has_value());
  EXPECT_EQ(out->options.rounds, EvalOptions{}.rounds);
  EXPECT_EQ(out->options.max_noise, EvalOptions{}.max_noise);
}

TEST(Protocol, WholeEvaluateLineIsAccepted) {
  json line = make_request(9, "evaluate");
  line.update(to_json(full_request()));
  auto message = parse_message(encode_line(line));
  ASSERT_TRUE(message.ok()) << message.error();
  EXPECT_EQ(message->version, kProtocolVersion);
  EXPECT_EQ(message->id, 9);
  auto request = eval_request_from_json(message->body);
  ASSERT_TRUE(request.ok()) << request.error();
  EXPECT_EQ(request->candidate.origin, "cand.cu");
}

TEST(Protocol, RequestErrorsNameTheJsonPath) {
  json j = to_json(full_request());
  j["options"]["rounds"] = "five";
  j["options"]["roundz"] = 3;
  j["candidate"].erase("source");
  j["reference"]["tunables"]["BLOCK"] = 1.5;
  auto out = eval_request_from_json(j);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("$.options.rounds: expected an integer"), std::string::npos)
      << out.error();
  EXPECT_NE(out.error().find("$.options.roundz: unknown key (did you mean 'rounds'?)"),
            std::string::npos)
      << out.error();
  EXPECT_NE(out.error().find("$.candidate.source: required field is missing"), std::string::npos)
      << out.error();
  EXPECT_NE(out.error().find("$.reference.tunables.BLOCK"), std::string::npos) << out.error();
}

TEST(Protocol, RequestRejectsNonsenseOptions) {
  json j = to_json(full_request());
  j["options"]["rounds"] = 0;
  j["options"]["seed"] = -1;
  j["options"]["pool_sets"] = 0;
  j["options"]["long_sample_ms"] = -1;
  j["options"]["full_gate_below_us"] = -2;
  auto out = eval_request_from_json(j);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("$.options.pool_sets: must be at least 1"), std::string::npos);
  EXPECT_NE(out.error().find("$.options.long_sample_ms: must be positive"), std::string::npos);
  EXPECT_NE(out.error().find("$.options.rounds: must be at least 1"), std::string::npos);
  EXPECT_NE(out.error().find("$.options.full_gate_below_us: must be a finite number"),
            std::string::npos);
  EXPECT_NE(out.error().find("$.options.seed: expected an unsigned integer"), std::string::npos);
  EXPECT_FALSE(eval_request_from_json(json::array()).ok());
}

// The options object alone (another timing request's, e.g. "cublaslt"): defaults where keys are
// missing, and the same checks as an evaluation's, with the path given.
TEST(Protocol, OptionsAloneKeepDefaultsAndNameTheirErrors) {
  auto options = eval_options_from_json(nlohmann::json{{"min_samples", 20}});
  ASSERT_TRUE(options) << options.error();
  EXPECT_EQ(options->min_samples, 20);
  EXPECT_DOUBLE_EQ(options->max_noise, EvalOptions{}.max_noise);
  auto unknown = eval_options_from_json(nlohmann::json{{"min_sampels", 20}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("$.options"), std::string::npos) << unknown.error();
  auto bad = eval_options_from_json(nlohmann::json{{"min_samples", 0}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("$.options.min_samples"), std::string::npos) << bad.error();
  EXPECT_FALSE(eval_options_from_json(nlohmann::json::array()));
}

TEST(Protocol, ResultRoundTripsEveryFieldIncludingNaN) {
  EvalResult in = full_result();
  json wire = over_the_wire(to_json(in));
  EXPECT_EQ(wire["mismatch"]["actual"], "nan");  // not null: the NaN is the finding
  auto out = eval_result_from_json(wire);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->verdict, Verdict::kIncorrect);
  EXPECT_EQ(out->detail, in.detail);
  EXPECT_EQ(out->compile_log, in.compile_log);
  EXPECT_EQ(out->compile_ms, 21.5);
  EXPECT_TRUE(out->compile_cache_hit);
  ASSERT_TRUE(out->mismatch.has_value());
  EXPECT_EQ(out->mismatch->output, "out");
  EXPECT_EQ(out->mismatch->shape, "n=1023");
  EXPECT_EQ(out->mismatch->index, 17);
  EXPECT_EQ(out->mismatch->expected, 1.25);
  EXPECT_TRUE(std::isnan(out->mismatch->actual));
  EXPECT_EQ(out->mismatch->round, 3);
  EXPECT_EQ(out->mismatch->phase, "timing");
  EXPECT_EQ(out->mismatch->stress, "std 40");
  ASSERT_TRUE(out->candidate_time.has_value());
  EXPECT_EQ(out->candidate_time->median_us, 301.5);
  EXPECT_EQ(out->candidate_time->noise, 0.004);
  EXPECT_EQ(out->candidate_time->min_us, 299.0);
  EXPECT_EQ(out->candidate_time->samples, 42);
  EXPECT_EQ(out->candidate_time->discarded, 2);
  ASSERT_TRUE(out->baseline_time.has_value());
  EXPECT_EQ(out->baseline_time->median_us, 310.25);
  ASSERT_TRUE(out->resources.has_value());
  EXPECT_EQ(out->resources->registers, 32);
  EXPECT_EQ(out->resources->local_bytes, 8);
  EXPECT_EQ(out->resources->static_shared_bytes, 1024);
  EXPECT_EQ(out->resources->dynamic_shared_bytes, 4096);
  EXPECT_EQ(out->resources->occupancy, 0.75);
  EXPECT_EQ(out->speedup, 1.029);
  EXPECT_EQ(out->sol_us, 240.5);
  EXPECT_EQ(out->sol_percent, 79.8);
  EXPECT_EQ(out->verify_ms, 120);
  EXPECT_EQ(out->time_ms, 450);
  EXPECT_EQ(out->total_ms, 600);
  EXPECT_EQ(out->shapes_verified, 7);
  EXPECT_EQ(out->device, in.device);
}

TEST(Protocol, InfinitiesSurviveToo) {
  EvalResult in;
  in.verdict = Verdict::kIncorrect;
  in.mismatch = Mismatch{"out",
                         "",
                         0,
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(),
                         0,
                         "sweep"};
  auto out = eval_result_from_json(over_the_wire(to_json(in)));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->mismatch->expected, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out->mismatch->actual, -std::numeric_limits<double>::infinity());
}

TEST(Protocol, MinimalResultHasNoOptionalParts) {
  EvalResult in;
  in.verdict = Verdict::kTimeout;
  json j = to_json(in);
  EXPECT_FALSE(j.contains("mismatch"));
  EXPECT_FALSE(j.contains("candidate_time"));
  EXPECT_FALSE(j.contains("device"));
  auto out = eval_result_from_json(j);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->verdict, Verdict::kTimeout);
  EXPECT_FALSE(out->mismatch.has_value());
  EXPECT_TRUE(out->device.is_null());
}

TEST(Protocol, EveryVerdictRoundTrips) {
  for (Verdict v : {Verdict::kOk, Verdict::kCompileError, Verdict::kInvalidPlan,
                    Verdict::kLaunchError, Verdict::kIncorrect, Verdict::kNondeterministic,
                    Verdict::kOutOfBounds, Verdict::kModifiedInput, Verdict::kTimeout,
                    Verdict::kCrash, Verdict::kSuspicious, Verdict::kGpuBusy, Verdict::kScreened}) {
    EvalResult in;
    in.verdict = v;
    auto out = eval_result_from_json(over_the_wire(to_json(in)));
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(out->verdict, v) << verdict_name(v);
  }
}

TEST(Protocol, ResultErrorsNameTheJsonPath) {
  json j = to_json(full_result());
  j["verdict"] = "okay";
  j["candidate_time"]["median_us"] = "fast";
  j["resources"]["registerz"] = 3;
  auto out = eval_result_from_json(j);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("$.verdict: unknown verdict 'okay'"), std::string::npos);
  EXPECT_NE(out.error().find("$.candidate_time.median_us: expected a number"), std::string::npos);
  EXPECT_NE(out.error().find("$.resources.registerz: unknown key"), std::string::npos);
  json missing = to_json(full_result());
  missing.erase("verdict");
  EXPECT_FALSE(eval_result_from_json(missing).ok());
}

TEST(Protocol, EncodedLinesAreSingleLinesEvenWithBadUtf8) {
  EvalRequest request = full_request();
  request.candidate.source = "line1\nline2\n\xff\xfe bad utf-8";
  std::string line = encode_line(to_json(request));
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto back = eval_request_from_json(json::parse(line));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_NE(back->candidate.source.find("line2\n"), std::string::npos);
  EXPECT_NE(back->candidate.source.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
}

TEST(Protocol, EnvelopesCarryVersionAndId) {
  json request = make_request(4, "ping");
  EXPECT_EQ(request, (json{{"v", kProtocolVersion}, {"id", 4}, {"op", "ping"}}));
  json response = make_response(4, true);
  EXPECT_EQ(response, (json{{"v", kProtocolVersion}, {"id", 4}, {"ok", true}}));
  auto parsed = parse_message(R"({"v":2,"id":7,"ok":false})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->version, 2);  // the caller compares versions, to name both in its message
  EXPECT_EQ(parsed->id, 7);
  EXPECT_FALSE(parsed->body["ok"].get<bool>());
}

TEST(Protocol, MalformedLinesAreErrors) {
  EXPECT_EQ(parse_message("Segmentation fault").error(), "not JSON");
  EXPECT_EQ(parse_message("[1,2]").error(), "not a JSON object");
  EXPECT_EQ(parse_message(R"({"id":1})").error(), "no integer protocol version \"v\"");
  EXPECT_EQ(parse_message(R"({"v":1,"id":"1"})").error(), "no integer \"id\"");
  EXPECT_FALSE(parse_message("").ok());
}

}  // namespace
}  // namespace kopt
