// The fake server's sockets and threads: one thread accepts, one thread per connection answers
// one request and closes (Connection: close), which is all an LLM client needs.
#include "tests/support/fake_llm_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/files.h"
#include "common/strings.h"
#include "tests/support/stalling_model.h"

namespace kopt::testing {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads until `want` bytes are in `buffer` or the peer stops; false on error or a 5 s stall.
bool read_more(int fd, std::string& buffer) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) return false;
  char chunk[65536];
  ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<size_t>(n));
  return true;
}

bool read_request(int fd, RecordedRequest& request) {
  std::string buffer;
  size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > (1u << 20) || !read_more(fd, buffer)) return false;
  }
  std::vector<std::string> lines = split(buffer.substr(0, header_end), '\n');
  std::vector<std::string> request_line = split(trim(lines[0]), ' ');
  if (request_line.size() < 2) return false;
  request.method = request_line[0];
  request.path = request_line[1];
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    request.headers[lower(trim(lines[i].substr(0, colon)))] = trim(lines[i].substr(colon + 1));
  }
  size_t length = 0;
  if (auto it = request.headers.find("content-length"); it != request.headers.end())
    length = std::strtoull(it->second.c_str(), nullptr, 10);
  request.body = buffer.substr(header_end + 4);
  while (request.body.size() < length) {
    if (!read_more(fd, request.body)) return false;
  }
  return true;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the client gave up (a timeout test): nothing to do
    data.remove_prefix(static_cast<size_t>(n));
  }
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace

Result<std::unique_ptr<FakeLlmServer>> FakeLlmServer::start(Options options) {
  std::unique_ptr<FakeLlmServer> server(new FakeLlmServer());
  server->options_ = options;
  if (!options.replay_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options.replay_dir, ec)) {
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.')
        server->replay_files_.push_back(entry.path());
    }
    if (ec) return make_error(options.replay_dir.string() + ": " + ec.message());
    if (server->replay_files_.empty())
      return make_error(options.replay_dir.string() + ": no files to replay");
    std::sort(server->replay_files_.begin(), server->replay_files_.end());
  }

  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    std::string error = std::strerror(errno);
    ::close(fd);
    return make_error("bind 127.0.0.1:" + std::to_string(options.port) + ": " + error);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  server->listen_fd_ = fd;
  server->port_ = ntohs(addr.sin_port);
  if (::pipe2(server->wake_pipe_, O_CLOEXEC) != 0)
    return make_error(std::string("pipe: ") + std::strerror(errno));
  server->acceptor_ = std::thread([s = server.get()] { s->accept_loop(); });
  return server;
}

FakeLlmServer::~FakeLlmServer() { stop(); }

void FakeLlmServer::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && listen_fd_ < 0) return;
    stopping_ = true;
  }
  stopping_cv_.notify_all();
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  for (auto& t : connections) t.join();
  for (int* fd : {&listen_fd_, &wake_pipe_[0], &wake_pipe_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

std::string FakeLlmServer::openai_base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::string FakeLlmServer::anthropic_base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeLlmServer::enqueue(FakeReply reply) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(reply));
}

void FakeLlmServer::set_default_reply(FakeReply reply) {
  std::lock_guard lock(mutex_);
  default_reply_ = std::move(reply);
}

std::vector<RecordedRequest> FakeLlmServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

size_t FakeLlmServer::request_count() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

int FakeLlmServer::max_concurrent() const {
  std::lock_guard lock(mutex_);
  return max_active_;
}

void FakeLlmServer::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (!fds[0].revents) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    connections_.emplace_back([this, fd] {
      serve(fd);
      ::close(fd);
    });
  }
}

bool FakeLlmServer::wait(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !stopping_cv_.wait_for(lock, delay, [this] { return stopping_; });
}

std::string fake_request_task(const std::string& body) {
  const std::string marker = "# Task: ";
  size_t at = body.find(marker);
  if (at == std::string::npos) return "";
  size_t start = at + marker.size(), end = start;
  while (end < body.size() && (std::isalnum(static_cast<unsigned char>(body[end])) ||
                               body[end] == '_' || body[end] == '-' || body[end] == '.')) {
    ++end;
  }
  return body.substr(start, end - start);
}

namespace {

std::string model_of(const std::string& body) {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("model") || !parsed["model"].is_string()) return "";
  return parsed["model"].get<std::string>();
}

// "01_axpy_vec4.txt" is a file for task "axpy".
bool replay_file_is_for(const std::filesystem::path& file, const std::string& task) {
  std::string stem = file.stem().string();
  size_t digits = 0;
  while (digits < stem.size() && std::isdigit(static_cast<unsigned char>(stem[digits]))) ++digits;
  if (digits < stem.size() && stem[digits] == '_') ++digits;
  std::string rest = stem.substr(digits);
  return rest == task || rest.rfind(task + "_", 0) == 0;
}

}  // namespace

// A reply from the queue, else the next replay file for the request's task and model (a
// "*.fault" file names a fault, any other file is a completion's text), else the default.
FakeReply FakeLlmServer::next_reply(const RecordedRequest& request) {
  std::lock_guard lock(mutex_);
  if (!queue_.empty()) {
    FakeReply r = std::move(queue_.front());
    queue_.pop_front();
    return r;
  }
  if (options_.stalling) return options_.stalling->answer(request);
  if (replay_files_.empty()) return default_reply_;
  std::string task = fake_request_task(request.body);
  std::vector<const std::filesystem::path*> files;
  if (!task.empty()) {
    for (const auto& f : replay_files_) {
      if (replay_file_is_for(f, task)) files.push_back(&f);
    }
  }
  const std::filesystem::path* file;
  if (files.empty()) {
    file = &replay_files_[replay_next_++ % replay_files_.size()];
  } else {
    size_t& cursor = replay_cursors_[task + "/" + model_of(request.body)];
    file = files[cursor++ % files.size()];
  }
  auto text = read_file(*file);
  if (!text) return FakeReply::failure(FakeFault::kServerError);
  if (file->extension() == ".fault") {
    auto fault = parse_fake_fault(trim(*text));
    return FakeReply::failure(fault ? *fault : FakeFault::kServerError);
  }
  return FakeReply::completion(*text);
}

void FakeLlmServer::serve(int fd) {
  RecordedRequest request;
  if (!read_request(fd, request)) return;
  int64_t serial;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    serial = static_cast<int64_t>(requests_.size());
    max_active_ = std::max(max_active_, ++active_);
  }
  // The gate a real endpoint keeps before any completion: the key, then the model.
  FakeReply reply;
  std::optional<FakeHttpResponse> listing;
  const auto& listed = options_.listed_models;
  if (!options_.required_key.empty() && fake_key_sent(request) != options_.required_key) {
    reply = FakeReply::failure(FakeFault::kUnauthorized);
  } else if (is_models_request(request)) {
    listing = build_models_response(request, listed);
  } else if (options_.only_listed_models &&
             std::find(listed.begin(), listed.end(), fake_requested_model(request)) ==
                 listed.end()) {
    reply = FakeReply::failure(FakeFault::kNotFound);
  } else {
    reply = next_reply(request);
  }
  if (options_.log_requests) {
    std::fprintf(stderr, "fake-llm-server: %s %s -> request %lld\n", request.method.c_str(),
                 request.path.c_str(), static_cast<long long>(serial));
  }
  bool keep_going = reply.delay.count() == 0 || wait(reply.delay);
  if (keep_going && reply.fault == FakeFault::kConnectionReset) {
    linger hard{1, 0};  // close() now sends RST instead of FIN
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  } else if (keep_going) {
    FakeHttpResponse response = listing ? *listing : build_fake_response(reply, request, serial);
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                       reason_phrase(response.status) +
                       "\r\nContent-Type: application/json\r\nConnection: close\r\n"
                       "Content-Length: " +
                       std::to_string(response.body.size()) + "\r\n";
    for (const auto& h : response.headers) head += h + "\r\n";
    send_all(fd, head + "\r\n");
    bool cut = reply.fault == FakeFault::kTruncatedBody;
    send_all(fd, std::string_view(response.body)
                     .substr(0, cut ? response.body.size() / 2 : response.body.size()));
  }
  std::lock_guard lock(mutex_);
  --active_;
}

}  // namespace kopt::testing
