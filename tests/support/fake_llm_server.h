// A fake LLM server on 127.0.0.1 for tests and end-to-end demos: real sockets, an ephemeral
// port, its own threads. It answers OpenAI-shaped requests (POST .../chat/completions) and
// Anthropic-shaped ones (POST .../messages) with canned completions taken from a queue, else
// from a directory of files (in name order, cycling), else "ok"; and, on request, with every
// fault a real endpoint has been seen to produce.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace kopt::testing {

enum class FakeFault {
  kNone,             // 200 with the completion
  kRateLimited,      // 429 with Retry-After: retry_after_s
  kServerError,      // 500
  kUnavailable,      // 503 with Retry-After when retry_after_s > 0
  kSlow,             // the completion, after `delay` (give a delay past the client's timeout)
  kConnectionReset,  // reads the request, then resets the connection (RST)
  kMalformedJson,    // 200 with a body that is not JSON
  kEmptyChoices,     // 200 with "choices": [] (Anthropic: "content": [])
  kTruncatedBody,    // Content-Length promises the whole body, half is sent, then close
  kHugeBody,         // 200 with a valid completion of huge_bytes characters
  kUnauthorized,     // 401 whose message echoes the key it was sent (as some servers do)
  kNotFound,         // 404 "model not found"
  kBadRequest,       // 400
  kLengthLimit,      // 200, finish_reason "length" (Anthropic: stop_reason "max_tokens")
  kRefusal,          // 200, content null and a "refusal" (Anthropic: stop_reason "refusal")
  kToolCall,         // 200, content null and "tool_calls" (Anthropic: a tool_use block)
};

// "none", "rate_limited", "server_error", "unavailable", "slow", "reset", "malformed", "empty",
// "truncated_body", "huge", "unauthorized", "not_found", "bad_request", "length", "refusal"; also
// the HTTP codes "429", "500", "503", "401", "404", "400".
Result<FakeFault> parse_fake_fault(const std::string& name);

struct FakeReply {
  FakeFault fault = FakeFault::kNone;
  std::string text = "ok";  // the completion (for kLengthLimit, the text up to the cut)
  int retry_after_s = 1;
  std::chrono::milliseconds delay{0};  // waited before answering, whatever the fault
  int64_t input_tokens = 10;
  int64_t output_tokens = 20;
  size_t huge_bytes = 5u << 20;
  // When set, sent as the body (any bytes: a proxy's Latin-1 error page) with the fault's status.
  std::optional<std::string> raw_body;
  // A careless or hostile endpoint: the completion's text gets the request's Authorization
  // header (or x-api-key) appended, as sent ("Authorization: Bearer sk-..."), and, with
  // echo_key_split, the key once more with a space and a comma between its characters.
  bool echo_authorization = false;
  bool echo_key_split = false;

  static FakeReply completion(std::string text);
  static FakeReply failure(FakeFault fault);
  static FakeReply slow(std::chrono::milliseconds delay, std::string text = "ok");
};

struct RecordedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class StallingModel;

// "axpy" from a request whose prompt says "# Task: axpy"; "" when it names no task.
std::string fake_request_task(const std::string& body);

class FakeLlmServer {
 public:
  struct Options {
    int port = 0;  // 0: an ephemeral port
    // Files served in name order, cycling; "" for none. A request whose prompt says
    // "# Task: NAME" gets the files named NN_NAME_*.txt (when there are any), each model name
    // (one per agent in a test config) with its own cursor: the answers a task's coder sees do
    // not depend on how the daemon interleaves tasks and agents.
    std::filesystem::path replay_dir;
    bool log_requests = false;         // one line per request on stderr
    // GET .../models answers with these (OpenAI or Anthropic shape, by the request's headers).
    std::vector<std::string> listed_models = {"fake-model"};
    // A completion for a model not in listed_models gets 404 (a misspelled model name).
    bool only_listed_models = false;
    // When set, every request with another key (Bearer or x-api-key) gets 401.
    std::string required_key;
    // Answers as a model that stalls (stalling_model.h) instead of replaying; queued replies
    // still come first.
    std::shared_ptr<StallingModel> stalling;
  };

  static Result<std::unique_ptr<FakeLlmServer>> start(Options options);
  static Result<std::unique_ptr<FakeLlmServer>> start() { return start(Options{}); }
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const { return port_; }
  std::string openai_base_url() const;     // http://127.0.0.1:PORT/v1
  std::string anthropic_base_url() const;  // http://127.0.0.1:PORT

  // Replies are served in the order queued, one per request.
  void enqueue(FakeReply reply);
  void enqueue(FakeFault fault) { enqueue(FakeReply::failure(fault)); }
  // What is served when the queue is empty and there is no replay directory.
  void set_default_reply(FakeReply reply);

  std::vector<RecordedRequest> requests() const;
  size_t request_count() const;
  // The most requests that were being answered at once.
  int max_concurrent() const;

  // Closes the socket, cuts every delay short and joins the threads.
  void stop();

 private:
  FakeLlmServer() = default;
  void accept_loop();
  void serve(int fd);
  FakeReply next_reply(const RecordedRequest& request);
  // Waits `delay`; false when the server is stopping.
  bool wait(std::chrono::milliseconds delay);

  Options options_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::condition_variable stopping_cv_;
  bool stopping_ = false;
  std::vector<std::thread> connections_;
  std::deque<FakeReply> queue_;
  FakeReply default_reply_;
  std::vector<std::filesystem::path> replay_files_;
  size_t replay_next_ = 0;
  std::map<std::string, size_t> replay_cursors_;  // by task + "/" + model
  std::vector<RecordedRequest> requests_;
  int active_ = 0;
  int max_active_ = 0;
  std::atomic<int64_t> served_{0};
};

// The body and status of a reply in the shape of the API at `path`.
struct FakeHttpResponse {
  int status = 200;
  std::string body;
  std::vector<std::string> headers;  // "Name: value", besides Content-Type and Content-Length
};
FakeHttpResponse build_fake_response(const FakeReply& reply, const RecordedRequest& request,
                                     int64_t serial);

// GET .../models (any query), which every models-list API shares.
bool is_models_request(const RecordedRequest& request);
// The models list: {"object": "list", "data": [{"id", ...}]}, or Anthropic's
// {"data": [{"type": "model", "id", ...}], "has_more": false} when the request has
// anthropic-version.
FakeHttpResponse build_models_response(const RecordedRequest& request,
                                       const std::vector<std::string>& models);
// The key the client sent (x-api-key or Authorization: Bearer), "(none)" without one.
std::string fake_key_sent(const RecordedRequest& request);
// The "model" of a request's JSON body, "" when it names none.
std::string fake_requested_model(const RecordedRequest& request);

}  // namespace kopt::testing
