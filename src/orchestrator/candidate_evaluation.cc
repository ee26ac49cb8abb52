#include "src/orchestrator/candidate_evaluation.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/json_limits.h"
#include "common/strings.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/kernel_file.h"

namespace kopt::orchestrator {

using nlohmann::json;

namespace {

std::string json_text(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return "";
  const json& v = object.at(key);
  return v.is_string() ? v.get<std::string>() : dump_json(v);
}

EvalRequest evaluation_request(const CandidateInput& input) {
  EvalRequest request;
  request.task_json = input.task->raw_json;
  request.reference = {input.reference_source, "reference.cu", {}};
  if (input.gpu) request.baseline = KernelSource{input.baseline_source, "baseline.cu", {}};
  request.candidate = {input.source, "candidate.cu", {}};
  // Hardware counters for each new best of the task (the baseline is the first), taken by the
  // worker after timing; a worker without counter permission says so once and goes on.
  request.options.profile = "cupti";
  // Only a kernel that may beat the best beyond the noise (the ones the sanitizer checks): the
  // pass costs 0.3-1.9 s of GPU per kernel on an H100 (bench/results/h100-2026-11-25-profile),
  // and a tie's counters are those of the best it ties with. Counters decide no verdict.
  request.options.profile_below_us =
      profile_below_us(input.best_us, input.best_noise, input.sanitize_above);
  // The same bar for the rest of the gate: every kernel that may become the task's best (and so
  // be sanitized, profiled, stored as a win and exported) gets all of it; the baseline (no best
  // yet) too. A stale bar (jobs in flight) is only ever higher: more kernels get the whole gate.
  if (input.screen && input.gpu) {
    request.options.full_gate_below_us = request.options.profile_below_us;
    request.options.screen_time_first = input.screen_time_first;
  }
  return request;
}

memory::KernelRecord kernel_record_of(const CandidateInput& input) {
  memory::KernelRecord kernel;
  kernel.source = input.source;
  kernel.task = input.task->name;
  kernel.parent_id = input.parent_id;
  kernel.origin = input.origin;
  kernel.tunables_json = input.tunables_json;
  return kernel;
}

}  // namespace

GpuIdentity gpu_from_device(const json& device) {
  GpuIdentity gpu;
  gpu.model = json_text(device, "name");
  gpu.cc = json_text(device, "cc");
  gpu.arch = json_text(device, "arch");
  gpu.driver = json_text(device, "driver");
  if (device.is_object() && device.contains("sms") && device["sms"].is_number_integer()) {
    gpu.sms = device["sms"].get<int>();
  }
  if (gpu.model.empty()) gpu.model = "unknown GPU";
  gpu.device = device;
  return gpu;
}

std::string describe_mismatch(const Mismatch& m) {
  return fmt::format("{}[{}] at {} ({}, round {}): expected {}, got {}", m.output, m.index,
                     m.shape.empty() ? std::string("the default shape") : m.shape, m.phase, m.round,
                     m.expected, m.actual);
}

void CandidateEvaluator::record(const CandidateInput& input, CandidateOutcome& outcome,
                                const memory::EvaluationRecord& evaluation) {
  auto id = recorder_.record_evaluation(kernel_record_of(input), evaluation);
  if (!id) {
    // The verdict stands; losing its record is worth a loud line, not the run.
    spdlog::error("[{}] could not store an evaluation: {}", input.task->name, id.error());
    return;
  }
  outcome.kernel_id = *id;
}

bool beats_beyond_noise(double candidate_us, double candidate_noise, double best_us,
                        double best_noise, double above) {
  if (best_us <= 0) return true;
  if (candidate_us <= 0) return false;
  double ratio = best_us / candidate_us;
  double noise = std::sqrt(candidate_noise * candidate_noise + best_noise * best_noise);
  return ratio > above && ratio > 1 + 3 * noise;
}

double profile_below_us(double best_us, double best_noise, double above) {
  if (best_us <= 0) return 0;
  return best_us / std::max({above, 1 + 3 * std::max(best_noise, 0.0), 1.0});
}

bool CandidateEvaluator::settle_provisional(const CandidateOutcome& outcome,
                                            const SanitizerOutcome& sanitized) {
  memory::EvaluationRecord evaluation = outcome.evaluation_record;
  bool passed = !sanitized.finding.has_value();
  if (!passed) {
    evaluation.verdict = Verdict::kSanitizer;
    evaluation.detail = clip_utf8(sanitized.finding->describe(), 20000, "");
    evaluation.speedup = 0;
    evaluation.sol_percent = 0;
  }
  auto id = recorder_.record_evaluation(outcome.kernel_record, evaluation);
  if (!id) {
    spdlog::error("[{}] could not store the sanitizer's verdict: {}", outcome.kernel_record.task,
                  id.error());
  }
  return passed;
}

CandidateOutcome CandidateEvaluator::reject_locally(const CandidateInput& input, Verdict verdict,
                                                    const std::string& detail) {
  CandidateOutcome outcome;
  outcome.judged = true;
  outcome.verdict = verdict;
  outcome.detail = detail;
  outcome.gpu = input.gpu;
  memory::EvaluationRecord evaluation;
  evaluation.gpu = {input.gpu->model, input.gpu->cc, input.gpu->driver, nvrtc_version()};
  evaluation.verdict = verdict;
  evaluation.detail = clip_utf8(detail, 20000, "");
  evaluation.tunables_json = input.tunables_json;
  record(input, outcome, evaluation);
  return outcome;
}

std::optional<CandidateOutcome> CandidateEvaluator::compile_gate(const CandidateInput& input) {
  if (!input.gpu) return std::nullopt;
  auto file = parse_kernel_file(input.source, "candidate.cu", input.task);
  if (!file) return reject_locally(input, Verdict::kInvalidPlan, file.error());
  if (input.gpu->arch.empty()) return std::nullopt;
  auto compiled = compile_confined(make_compile_request(*file, {}, input.gpu->arch), cache_);
  if (!compiled) {
    CandidateOutcome outcome;
    outcome.error = "compile gate: " + compiled.error();
    return outcome;
  }
  if (!compiled->ok) return reject_locally(input, Verdict::kCompileError, compiled->log);
  // The task's reference too (a cache hit after its first candidate): a worker that shares
  // this cache then never spends GPU time waiting for NVRTC on a task's first evaluation.
  if (auto reference = parse_kernel_file(input.reference_source, "reference.cu", input.task))
    (void)compile_confined(make_compile_request(*reference, {}, input.gpu->arch), cache_);
  return std::nullopt;
}

CandidateEvaluator::SanitizeStep CandidateEvaluator::sanitize_new_best(const CandidateInput& input,
                                                                       const EvalRequest& request,
                                                                       EvalResult& result) {
  // A would-be new best of its task runs once more under compute-sanitizer before it counts: a
  // write past the guard zones or a race that did not fire while it was verified shows there.
  // Only a gain beyond the noise is worth the tools' time; with a lane the pass runs beside the
  // next evaluations and the kernel is provisional until it ends.
  double candidate_us = result.candidate_time ? result.candidate_time->median_us : 0;
  if (result.verdict != Verdict::kOk || !input.gpu || candidate_us <= 0 ||
      (input.best_us > 0 && candidate_us >= input.best_us)) {
    return SanitizeStep::kNotNeeded;
  }
  double candidate_noise = result.candidate_time->noise;
  if (input.best_us > 0 && !beats_beyond_noise(candidate_us, candidate_noise, input.best_us,
                                               input.best_noise, input.sanitize_above)) {
    return SanitizeStep::kNoiseLevel;
  }
  if (sanitizer_lane_) return SanitizeStep::kProvisional;
  SanitizerOutcome sanitized = evaluator_.sanitize(request);
  if (sanitized.ran) spdlog::info("[{}] new best: {}", input.task->name, sanitized.note);
  if (sanitized.finding) {
    result.verdict = Verdict::kSanitizer;
    result.detail = sanitized.finding->describe();
  }
  return SanitizeStep::kSanitized;
}

void CandidateEvaluator::take_verdict(const CandidateInput& input, const EvalResult& result,
                                      CandidateOutcome& outcome) {
  bool unavailable = result.profile_note.rfind("profiling unavailable", 0) == 0;
  if (!result.profile_note.empty() && (!unavailable || !profiling_unavailable_said_.exchange(true)))
    spdlog::warn("[{}] {}", input.task->name, result.profile_note);
  outcome.judged = true;
  outcome.verdict = result.verdict;
  outcome.gpu = gpu_from_device(result.device);
  if (input.gpu && outcome.gpu->model == "unknown GPU") outcome.gpu = input.gpu;
  outcome.detail = result.detail;
  if (result.verdict == Verdict::kCompileError && !result.compile_log.empty()) {
    outcome.detail = result.compile_log;
  }
  if (result.mismatch) outcome.detail += "\nfirst mismatch: " + describe_mismatch(*result.mismatch);
}

namespace {

memory::EvaluationRecord evaluation_record_of(const CandidateInput& input,
                                              const CandidateOutcome& outcome,
                                              const EvalResult& result) {
  double median = result.candidate_time ? result.candidate_time->median_us : 0;
  // The baseline is evaluated without a second copy of itself: it is its own reference point.
  double baseline_us = result.baseline_time ? result.baseline_time->median_us : median;
  double speedup = result.baseline_time ? result.speedup : 1.0;

  memory::EvaluationRecord evaluation;
  evaluation.gpu = {outcome.gpu->model, outcome.gpu->cc, outcome.gpu->driver, nvrtc_version()};
  evaluation.verdict = result.verdict;
  evaluation.detail = clip_utf8(outcome.detail, 20000, "");
  evaluation.tunables_json = input.tunables_json;
  evaluation.median_us = median;
  evaluation.noise = result.candidate_time ? result.candidate_time->noise : 0;
  evaluation.baseline_us = baseline_us;
  evaluation.speedup = result.verdict == Verdict::kOk ? speedup : 0;
  evaluation.sol_percent = result.verdict == Verdict::kOk ? result.sol_percent : 0;
  json resources = result.resources ? resources_to_json(*result.resources) : json::object();
  // The sha256 of the CUBIN the worker judged: `kopt export` refuses to ship other bytes.
  if (!result.image_sha256.empty()) resources["image_sha256"] = result.image_sha256;
  evaluation.resources_json = dump_json(resources);
  if (result.profile) evaluation.profile_json = dump_json(to_json(*result.profile));
  return evaluation;
}

std::optional<VerifiedKernel> verified_kernel_of(const CandidateInput& input,
                                                 const CandidateOutcome& outcome,
                                                 const EvalResult& result,
                                                 const memory::EvaluationRecord& evaluation) {
  bool screened = result.verdict == Verdict::kScreened;
  if ((result.verdict != Verdict::kOk && !screened) || evaluation.median_us <= 0 ||
      outcome.kernel_id <= 0)
    return std::nullopt;
  VerifiedKernel k;
  k.screened = screened;
  k.kernel_id = outcome.kernel_id;
  k.parent_id = input.parent_id;
  k.source = input.source;
  k.origin = input.origin.agent;
  k.median_us = evaluation.median_us;
  k.noise = evaluation.noise;
  k.baseline_us = evaluation.baseline_us;
  k.speedup = result.baseline_time ? result.speedup : 1.0;
  k.sol_us = result.sol_us;
  k.sol_percent = result.sol_percent;
  k.resources = result.resources;
  k.profile = result.profile;
  return k;
}

}  // namespace

std::string phase_steps(const EvalResult& result) {
  std::vector<std::string> parts;
  double named = 0;
  auto add = [&parts](const std::string& name, double ms) {
    parts.push_back(fmt::format("{} {:.1f}", name, ms));
  };
  if (result.phases.is_object()) {
    for (const auto& [name, value] : result.phases.items()) {
      if (!value.is_number()) continue;
      add(name, value.get<double>());
      if (name.find('.') == std::string::npos) named += value.get<double>();
    }
    if (result.phases.contains("daemon.exchange") && result.phases["daemon.exchange"].is_number())
      add("daemon.transport", result.phases["daemon.exchange"].get<double>() - result.total_ms);
  }
  if (named > 0) add("worker.unnamed", result.total_ms - named);
  if (result.verify_phases.is_object()) {
    for (const auto& [name, value] : result.verify_phases.items()) {
      const std::string suffix = "_ms";
      if (!value.is_number() || name.size() <= suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      add("verify." + name.substr(0, name.size() - suffix.size()), value.get<double>());
    }
  }
  return join(parts, ", ");
}

std::string timing_text(const EvalResult& result) {
  if (!result.candidate_time) return "none";
  std::string text = std::to_string(result.candidate_time->samples) + " samples";
  if (result.baseline_time)
    text += " (baseline " + std::to_string(result.baseline_time->samples) + ")";
  const auto& facts = result.timing_facts;
  if (facts.is_object() && facts.contains("stop") && facts["stop"].is_string())
    text += ", stopped: " + one_line_text(clip_utf8(facts["stop"].get<std::string>(), 40));
  return text;
}

namespace {

// Where one evaluation's time went, in the run log (debug): what daemon_throughput reads to say
// whether the GPU, the compile or the queue bounds a night.
void log_phases(const CandidateInput& input, const EvalResult& result,
                std::chrono::steady_clock::time_point started,
                std::chrono::steady_clock::time_point gated) {
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  spdlog::debug(
      "[{}] judged {} in {:.0f} ms: compile gate {:.0f} ms, worker {:.0f} ms (compile {:.0f}{}, "
      "verify {:.0f}, time {:.0f}); timing: {}; steps: {}",
      input.task->name, verdict_name(result.verdict), ms(started, std::chrono::steady_clock::now()),
      ms(started, gated), result.total_ms, result.compile_ms,
      result.compile_cache_hit ? " cached" : "", result.verify_ms, result.time_ms,
      timing_text(result), phase_steps(result));
}

}  // namespace

CandidateOutcome CandidateEvaluator::judge(const CandidateInput& input) {
  auto started = std::chrono::steady_clock::now();
  if (auto rejected = compile_gate(input)) return std::move(*rejected);
  auto gated = std::chrono::steady_clock::now();
  EvalRequest request = evaluation_request(input);
  auto result = evaluator_.evaluate(request);
  if (result) log_phases(input, *result, started, gated);
  CandidateOutcome outcome;
  if (!result) {
    outcome.error = result.error();
    return outcome;
  }
  if (result->verdict == Verdict::kGpuBusy) {
    // A number from a shared GPU must not become a result, a win or a lesson: nothing is stored.
    outcome.gpu_busy = true;
    outcome.error = result->detail;
    return outcome;
  }
  SanitizeStep step = sanitize_new_best(input, request, *result);
  take_verdict(input, *result, outcome);
  memory::EvaluationRecord evaluation = evaluation_record_of(input, outcome, *result);
  outcome.noise_level = step == SanitizeStep::kNoiseLevel;
  if (step == SanitizeStep::kProvisional) {
    // Stored now (its id may seed children), but never as 'ok' until the pass ends.
    outcome.provisional = true;
    outcome.sanitize_request = request;
    outcome.evaluation_record = evaluation;
    evaluation.verdict = Verdict::kSanitizing;
  }
  record(input, outcome, evaluation);
  if (outcome.provisional) outcome.kernel_record = kernel_record_of(input);
  outcome.verified = verified_kernel_of(input, outcome, *result, evaluation);
  outcome.result = std::move(*result);
  return outcome;
}

}  // namespace kopt::orchestrator
