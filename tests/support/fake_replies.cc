// The bodies the fake server sends, in the OpenAI or the Anthropic shape.
#include <nlohmann/json.hpp>

#include "tests/support/fake_llm_server.h"

namespace kopt::testing {

using nlohmann::json;

namespace {

bool anthropic_shape(const RecordedRequest& request) {
  return request.headers.count("anthropic-version") ||
         (request.path.size() >= 9 && request.path.rfind("/messages") == request.path.size() - 9);
}

std::string requested_model(const RecordedRequest& request) {
  std::string model = fake_requested_model(request);
  return model.empty() ? "fake-model" : model;
}

std::string completion_body(const FakeReply& reply, const RecordedRequest& request,
                            const std::string& text, bool cut, bool empty, int64_t serial,
                            bool refused = false) {
  std::string model = requested_model(request);
  if (anthropic_shape(request)) {
    json content = empty ? json::array() : json::array({{{"type", "text"}, {"text", text}}});
    std::string stop = refused ? "refusal" : (cut ? "max_tokens" : "end_turn");
    return json{
        {"id", "msg_fake_" + std::to_string(serial)},
        {"type", "message"},
        {"role", "assistant"},
        {"model", model},
        {"content", content},
        {"stop_reason", stop},
        {"usage", {{"input_tokens", reply.input_tokens}, {"output_tokens", reply.output_tokens}}}}
        .dump();
  }
  json message = {{"role", "assistant"}, {"content", text}};
  if (refused) message = {{"role", "assistant"}, {"content", nullptr}, {"refusal", text}};
  json choices =
      empty
          ? json::array()
          : json::array(
                {{{"index", 0}, {"message", message}, {"finish_reason", cut ? "length" : "stop"}}});
  return json{{"id", "chatcmpl-fake-" + std::to_string(serial)},
              {"object", "chat.completion"},
              {"created", 0},
              {"model", model},
              {"choices", choices},
              {"usage",
               {{"prompt_tokens", reply.input_tokens},
                {"completion_tokens", reply.output_tokens},
                {"total_tokens", reply.input_tokens + reply.output_tokens}}}}
      .dump();
}

// A 200 with a tool call instead of text (OpenAI-compatible servers send content null), although
// no tool was offered. Refusals are completion_body's, with their text.
std::string tool_call_body(const FakeReply& reply, const RecordedRequest& request, int64_t serial) {
  if (anthropic_shape(request)) {
    json content = json::array({{{"type", "tool_use"},
                                 {"id", "toolu_fake_" + std::to_string(serial)},
                                 {"name", "write_file"},
                                 {"input", {{"path", "kernel.cu"}}}}});
    return json{
        {"id", "msg_fake_" + std::to_string(serial)},
        {"type", "message"},
        {"role", "assistant"},
        {"model", requested_model(request)},
        {"content", content},
        {"stop_reason", "tool_use"},
        {"usage", {{"input_tokens", reply.input_tokens}, {"output_tokens", reply.output_tokens}}}}
        .dump();
  }
  json message = {{"role", "assistant"}, {"content", nullptr}};
  message["tool_calls"] = json::array(
      {{{"id", "call_fake_" + std::to_string(serial)},
        {"type", "function"},
        {"function", {{"name", "write_file"}, {"arguments", "{\"path\": \"kernel.cu\"}"}}}}});
  json usage_openai = {{"prompt_tokens", reply.input_tokens},
                       {"completion_tokens", reply.output_tokens},
                       {"total_tokens", reply.input_tokens + reply.output_tokens}};
  return json{
      {"id", "chatcmpl-fake-" + std::to_string(serial)},
      {"object", "chat.completion"},
      {"model", requested_model(request)},
      {"choices",
       json::array({{{"index", 0}, {"message", message}, {"finish_reason", "tool_calls"}}})},
      {"usage", usage_openai}}
      .dump();
}

std::string error_body(const RecordedRequest& request, const std::string& type,
                       const std::string& message) {
  if (anthropic_shape(request)) {
    return json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}.dump();
  }
  return json{{"error", {{"message", message}, {"type", type}, {"code", nullptr}}}}.dump();
}

}  // namespace

// The key as the client sent it, so that a 401 can echo it the way careless servers do.
std::string fake_key_sent(const RecordedRequest& request) {
  if (auto it = request.headers.find("x-api-key"); it != request.headers.end()) return it->second;
  if (auto it = request.headers.find("authorization"); it != request.headers.end()) {
    const std::string& v = it->second;
    return v.rfind("Bearer ", 0) == 0 ? v.substr(7) : v;
  }
  return "(none)";
}

std::string fake_requested_model(const RecordedRequest& request) {
  json body = json::parse(request.body, nullptr, false);
  if (body.is_object() && body.contains("model") && body["model"].is_string())
    return body["model"].get<std::string>();
  return "";
}

bool is_models_request(const RecordedRequest& request) {
  std::string path = request.path.substr(0, request.path.find('?'));
  return request.method == "GET" && path.size() >= 7 && path.rfind("/models") == path.size() - 7;
}

FakeHttpResponse build_models_response(const RecordedRequest& request,
                                       const std::vector<std::string>& models) {
  json data = json::array();
  for (const auto& m : models) {
    if (anthropic_shape(request)) {
      data.push_back({{"type", "model"},
                      {"id", m},
                      {"display_name", m},
                      {"created_at", "2026-01-01T00:00:00Z"}});
    } else {
      data.push_back({{"id", m}, {"object", "model"}, {"created", 0}, {"owned_by", "fake"}});
    }
  }
  FakeHttpResponse r;
  if (anthropic_shape(request)) {
    r.body = json{{"data", data},
                  {"has_more", false},
                  {"first_id", models.empty() ? json(nullptr) : json(models.front())},
                  {"last_id", models.empty() ? json(nullptr) : json(models.back())}}
                 .dump();
  } else {
    r.body = json{{"object", "list"}, {"data", data}}.dump();
  }
  return r;
}

namespace {

// The completion's text, with the key echoed when the reply asks for it.
std::string completion_text(const FakeReply& reply, const RecordedRequest& request) {
  std::string text = reply.text;
  if (reply.echo_authorization) {
    auto header = request.headers.find("authorization");
    text += "\nAuthorization: " +
            (header != request.headers.end() ? header->second : fake_key_sent(request)) + "\n";
  }
  if (reply.echo_key_split) {
    std::string split;
    for (char c : fake_key_sent(request)) split += std::string(split.empty() ? "" : ", ") + c;
    text += "\n// " + split + "\n";
  }
  return text;
}

// The reply's fault as the API at the request's path answers it.
FakeHttpResponse build_fault_response(const FakeReply& reply, const RecordedRequest& request,
                                      int64_t serial) {
  FakeHttpResponse r;
  const std::string text = completion_text(reply, request);
  switch (reply.fault) {
    case FakeFault::kNone:
    case FakeFault::kSlow:
    case FakeFault::kTruncatedBody:  // the server cuts it while sending
    case FakeFault::kConnectionReset:
      r.body = completion_body(reply, request, text, false, false, serial);
      break;
    case FakeFault::kLengthLimit:
      r.body = completion_body(reply, request, text, true, false, serial);
      break;
    case FakeFault::kRefusal:
      r.body = completion_body(reply, request, text, false, false, serial, true);
      break;
    case FakeFault::kToolCall:
      r.body = tool_call_body(reply, request, serial);
      break;
    case FakeFault::kEmptyChoices:
      r.body = completion_body(reply, request, "", false, true, serial);
      break;
    case FakeFault::kHugeBody:
      r.body =
          completion_body(reply, request, std::string(reply.huge_bytes, 'x'), false, false, serial);
      break;
    case FakeFault::kMalformedJson:
      r.body = "{\"choices\": [{\"message\": {\"content\": \"unterminated";
      break;
    case FakeFault::kRateLimited:
      r.status = 429;
      r.headers.push_back("Retry-After: " + std::to_string(reply.retry_after_s));
      r.body = error_body(request, "rate_limit_error", "Rate limit reached; slow down");
      break;
    case FakeFault::kServerError:
      r.status = 500;
      r.body = error_body(request, "server_error", "The server had an error");
      break;
    case FakeFault::kUnavailable:
      r.status = 503;
      if (reply.retry_after_s > 0)
        r.headers.push_back("Retry-After: " + std::to_string(reply.retry_after_s));
      r.body = error_body(request, "overloaded_error", "Service unavailable, overloaded");
      break;
    case FakeFault::kUnauthorized:
      r.status = 401;
      r.body = error_body(request, "authentication_error",
                          "Incorrect API key provided: " + fake_key_sent(request));
      break;
    case FakeFault::kNotFound:
      r.status = 404;
      r.body = error_body(request, "not_found_error",
                          "The model '" + requested_model(request) + "' does not exist");
      break;
    case FakeFault::kBadRequest:
      r.status = 400;
      r.body = error_body(request, "invalid_request_error", "max_tokens is too large");
      break;
  }
  return r;
}

}  // namespace

FakeHttpResponse build_fake_response(const FakeReply& reply, const RecordedRequest& request,
                                     int64_t serial) {
  FakeHttpResponse r = build_fault_response(reply, request, serial);
  if (reply.raw_body) r.body = *reply.raw_body;
  return r;
}

Result<FakeFault> parse_fake_fault(const std::string& name) {
  static const std::map<std::string, FakeFault> kNames = {
      {"none", FakeFault::kNone},
      {"rate_limited", FakeFault::kRateLimited},
      {"429", FakeFault::kRateLimited},
      {"server_error", FakeFault::kServerError},
      {"500", FakeFault::kServerError},
      {"unavailable", FakeFault::kUnavailable},
      {"503", FakeFault::kUnavailable},
      {"slow", FakeFault::kSlow},
      {"reset", FakeFault::kConnectionReset},
      {"malformed", FakeFault::kMalformedJson},
      {"empty", FakeFault::kEmptyChoices},
      {"truncated_body", FakeFault::kTruncatedBody},
      {"huge", FakeFault::kHugeBody},
      {"unauthorized", FakeFault::kUnauthorized},
      {"401", FakeFault::kUnauthorized},
      {"not_found", FakeFault::kNotFound},
      {"404", FakeFault::kNotFound},
      {"bad_request", FakeFault::kBadRequest},
      {"400", FakeFault::kBadRequest},
      {"length", FakeFault::kLengthLimit},
      {"refusal", FakeFault::kRefusal},
      {"tool_call", FakeFault::kToolCall},
  };
  auto it = kNames.find(name);
  if (it == kNames.end()) return make_error("unknown fault '" + name + "'");
  return it->second;
}

FakeReply FakeReply::completion(std::string text) {
  FakeReply r;
  r.text = std::move(text);
  return r;
}

FakeReply FakeReply::failure(FakeFault fault) {
  FakeReply r;
  r.fault = fault;
  return r;
}

FakeReply FakeReply::slow(std::chrono::milliseconds delay, std::string text) {
  FakeReply r;
  r.fault = FakeFault::kSlow;
  r.delay = delay;
  r.text = std::move(text);
  return r;
}

}  // namespace kopt::testing
