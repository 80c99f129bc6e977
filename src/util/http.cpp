// SPDX-License-Identifier: Apache-2.0
#include "util/http.hpp"

#include <curl/curl.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <stdexcept>

namespace pyebpf {
namespace {

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append_body(char* data, std::size_t size, std::size_t nmemb, void* user) {
  auto* out = static_cast<std::string*>(user);
  // Error bodies are short; a huge body is not something we need whole.
  std::size_t n = size * nmemb;
  if (out->size() < (1u << 20)) out->append(data, std::min<std::size_t>(n, (1u << 20) - out->size()));
  return n;
}

}  // namespace

struct HttpClient::Impl {
  CURL* curl = nullptr;
  std::string user, password;
  std::function<bool()> should_abort;
};

namespace {

int progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* impl = static_cast<HttpClient::Impl*>(user);
  return impl->should_abort && impl->should_abort() ? 1 : 0;
}

}  // namespace

HttpClient::HttpClient() : impl_(std::make_unique<Impl>()) {
  global_init_once();
  impl_->curl = curl_easy_init();
  if (!impl_->curl) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() {
  if (impl_->curl) curl_easy_cleanup(impl_->curl);
}

void HttpClient::set_abort(std::function<bool()> should_abort) {
  impl_->should_abort = std::move(should_abort);
}

void HttpClient::set_credentials(std::string user, std::string password) {
  impl_->user = std::move(user);
  impl_->password = std::move(password);
}

HttpResponse HttpClient::post(const std::string& url, std::string_view body,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::chrono::milliseconds timeout) {
  CURL* c = impl_->curl;
  curl_easy_reset(c);  // keeps the live connection, forgets the last request's options
  HttpResponse r;
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) list = curl_slist_append(list, (k + ": " + v).c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(timeout.count(), 1)));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::clamp<long long>(timeout.count(), 1, 5000)));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  if (impl_->should_abort) {
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, impl_.get());
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  if (!impl_->user.empty() || !impl_->password.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(c, CURLOPT_USERNAME, impl_->user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, impl_->password.c_str());
  }
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    r.error = curl_easy_strerror(rc);
    r.status = 0;
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string HttpClient::escape(std::string_view text) {
  global_init_once();
  char* e = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

namespace {

using CurlUrl = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

// `url` parsed by libcurl, the same parser that later sends to it; null with
// `why` set when curl refuses it.
CurlUrl parse_url(const std::string& url, std::string& why) {
  CurlUrl u(curl_url(), curl_url_cleanup);
  if (!u) throw std::bad_alloc();
  if (CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK) {
    why = curl_url_strerror(rc);
    return CurlUrl(nullptr, curl_url_cleanup);
  }
  return u;
}

std::string url_part(CURLU* u, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(u, part, &text, 0) != CURLUE_OK || !text) return {};
  std::string out = text;
  curl_free(text);
  return out;
}

}  // namespace

std::optional<std::string> http_url_problem(const std::string& url) {
  std::string why;
  CurlUrl u = parse_url(url, why);
  if (!u) return "curl says: " + why;  // the text is not echoed: it may hold a password
  std::string scheme = url_part(u.get(), CURLUPART_SCHEME);
  if (scheme != "http" && scheme != "https") return fmt::format("got scheme '{}'", scheme);
  if (url_part(u.get(), CURLUPART_HOST).empty()) return "no host";
  return std::nullopt;
}

bool url_has_credentials(const std::string& url) {
  std::string why;
  CurlUrl u = parse_url(url, why);
  return u && (!url_part(u.get(), CURLUPART_USER).empty() || !url_part(u.get(), CURLUPART_PASSWORD).empty());
}

std::string redact_url(const std::string& url) {
  std::string why;
  CurlUrl u = parse_url(url, why);
  if (!u) return "(a URL curl cannot parse)";  // it may hold a password: not echoed
  curl_url_set(u.get(), CURLUPART_USER, nullptr, 0);
  curl_url_set(u.get(), CURLUPART_PASSWORD, nullptr, 0);
  return url_part(u.get(), CURLUPART_URL);
}

}  // namespace pyebpf
