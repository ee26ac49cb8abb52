#include "llm/http_transport.h"

#include <curl/curl.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>

#include "common/strings.h"

namespace kopt {

namespace {

struct EasyDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlEasy = std::unique_ptr<CURL, EasyDeleter>;
using CurlHeaders = std::unique_ptr<curl_slist, SlistDeleter>;

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const HttpPost* post = nullptr;
  std::string body;
  bool too_large = false;
  std::optional<std::chrono::milliseconds> retry_after;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (t->body.size() + n > t->post->max_response_bytes) {
    t->too_large = true;
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  t->body.append(data, n);
  return n;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  std::string_view line(data, n);
  // A new status line (after a 100 Continue or a redirect) starts a new set of headers.
  if (starts_with(line, "HTTP/")) t->retry_after.reset();
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name = lower(trim(line.substr(0, colon)));
  std::string value = trim(line.substr(colon + 1));
  if (name == "retry-after-ms") {
    char* end = nullptr;
    double ms = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && ms >= 0) {
      t->retry_after = std::chrono::milliseconds(static_cast<int64_t>(ms));
    }
  } else if (name == "retry-after" && !t->retry_after) {
    t->retry_after = parse_retry_after(value);
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->post->cancel && t->post->cancel->load() ? 1 : 0;
}

// Loopback never goes through a proxy (a local vLLM behind the user's http_proxy would fail);
// the user's own no_proxy list is kept.
std::string no_proxy_list() {
  std::string list = "127.0.0.1,localhost,::1";
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    if (const char* v = std::getenv(name); v && *v) return list + "," + v;
  }
  return list;
}

HttpReply::Outcome classify(CURLcode code, const Transfer& t) {
  switch (code) {
    case CURLE_OK:
      return HttpReply::Outcome::kResponse;
    case CURLE_OPERATION_TIMEDOUT:
      return HttpReply::Outcome::kTimeout;
    case CURLE_ABORTED_BY_CALLBACK:
      return HttpReply::Outcome::kCancelled;
    case CURLE_WRITE_ERROR:
      return t.too_large ? HttpReply::Outcome::kTooLarge : HttpReply::Outcome::kConnection;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return HttpReply::Outcome::kInvalid;
    default:
      return HttpReply::Outcome::kConnection;
  }
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value) {
  std::string v = trim(value);
  if (v.empty()) return std::nullopt;
  if (v.find_first_not_of("0123456789") == std::string::npos) {
    return std::chrono::seconds(std::strtoll(v.c_str(), nullptr, 10));
  }
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  time_t now = std::time(nullptr);
  return std::chrono::seconds(when > now ? when - now : 0);
}

HttpReply http_post(const HttpPost& post) {
  global_init_once();
  HttpReply reply;
  CurlEasy curl(curl_easy_init());
  if (!curl) {
    reply.outcome = HttpReply::Outcome::kConnection;
    reply.error = "curl_easy_init failed";
    return reply;
  }
  curl_slist* raw = nullptr;
  for (const auto& h : post.headers) raw = curl_slist_append(raw, h.c_str());
  // No "Expect: 100-continue": it costs a round trip (or a second's wait) on large prompts.
  raw = curl_slist_append(raw, "Expect:");
  CurlHeaders headers(raw);

  Transfer transfer;
  transfer.post = &post;
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::string no_proxy = no_proxy_list();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, post.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, post.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  if (post.get) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(post.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(post.timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);       // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);  // generations can take minutes
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_NOPROXY, no_proxy.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

  CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  reply.outcome = classify(code, transfer);
  reply.retry_after = transfer.retry_after;
  reply.body = std::move(transfer.body);
  if (code != CURLE_OK) {
    reply.error = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    if (reply.outcome == HttpReply::Outcome::kTooLarge) {
      reply.error = "response larger than " + std::to_string(post.max_response_bytes) + " bytes";
    }
  }
  return reply;
}

}  // namespace kopt
