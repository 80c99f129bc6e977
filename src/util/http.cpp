// SPDX-License-Identifier: Apache-2.0
#include "util/http.hpp"

// Calls go through the pointers below, not curl's type-checking macros.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <stdexcept>

#include "pyebpf/error.hpp"

namespace pyebpf {
namespace {

// libcurl, loaded at its first use. Only the ClickHouse output needs it, and
// linking it would load ~30 shared libraries (TLS, Kerberos, LDAP, ...) into
// every run: 5.6 MB of pyebpf's resident memory, and their relocations in its
// start time. Either Debian flavour of libcurl 4 will do (same ABI).
struct Curl {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_easy_escape) easy_escape;
  decltype(&curl_free) free;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  decltype(&curl_url) url;
  decltype(&curl_url_cleanup) url_cleanup;
  decltype(&curl_url_set) url_set;
  decltype(&curl_url_get) url_get;
  decltype(&curl_url_strerror) url_strerror;
};

template <typename F>
void bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn)
    throw Error(fmt::format("libcurl lacks {}", name), "install libcurl 7.80 or newer (apt-get install libcurl4)");
}

Curl load_curl() {
  void* lib = nullptr;
  for (const char* soname : {"libcurl.so.4", "libcurl-gnutls.so.4"}) {
    if ((lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib) throw Error("cannot load libcurl.so.4 (HTTP output)", "install it: apt-get install libcurl4");
  Curl c{};  // the library stays loaded until exit
  bind(lib, c.global_init, "curl_global_init");
  bind(lib, c.easy_init, "curl_easy_init");
  bind(lib, c.easy_cleanup, "curl_easy_cleanup");
  bind(lib, c.easy_reset, "curl_easy_reset");
  bind(lib, c.easy_setopt, "curl_easy_setopt");
  bind(lib, c.easy_perform, "curl_easy_perform");
  bind(lib, c.easy_getinfo, "curl_easy_getinfo");
  bind(lib, c.easy_strerror, "curl_easy_strerror");
  bind(lib, c.easy_escape, "curl_easy_escape");
  bind(lib, c.free, "curl_free");
  bind(lib, c.slist_append, "curl_slist_append");
  bind(lib, c.slist_free_all, "curl_slist_free_all");
  bind(lib, c.url, "curl_url");
  bind(lib, c.url_cleanup, "curl_url_cleanup");
  bind(lib, c.url_set, "curl_url_set");
  bind(lib, c.url_get, "curl_url_get");
  bind(lib, c.url_strerror, "curl_url_strerror");
  c.global_init(CURL_GLOBAL_DEFAULT);
  return c;
}

// Throws pyebpf::Error when libcurl cannot be loaded; every call after the
// first returns the same table.
const Curl& curl() {
  static const Curl api = load_curl();
  return api;
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
  impl_->curl = curl().easy_init();
  if (!impl_->curl) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() {
  if (impl_->curl) curl().easy_cleanup(impl_->curl);
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
  const Curl& api = curl();
  CURL* c = impl_->curl;
  api.easy_reset(c);  // keeps the live connection, forgets the last request's options
  HttpResponse r;
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) list = api.slist_append(list, (k + ": " + v).c_str());
  list = api.slist_append(list, "Expect:");  // no 100-continue round trip
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  api.easy_setopt(c, CURLOPT_POST, 1L);
  api.easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  api.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  api.easy_setopt(c, CURLOPT_HTTPHEADER, list);
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(timeout.count(), 1)));
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::clamp<long long>(timeout.count(), 1, 5000)));
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  if (impl_->should_abort) {
    api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    api.easy_setopt(c, CURLOPT_XFERINFODATA, impl_.get());
    api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  if (!impl_->user.empty() || !impl_->password.empty()) {
    api.easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    api.easy_setopt(c, CURLOPT_USERNAME, impl_->user.c_str());
    api.easy_setopt(c, CURLOPT_PASSWORD, impl_->password.c_str());
  }
  CURLcode rc = api.easy_perform(c);
  api.slist_free_all(list);
  if (rc != CURLE_OK) {
    r.error = api.easy_strerror(rc);
    r.status = 0;
    return r;
  }
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string HttpClient::escape(std::string_view text) {
  char* e = curl().easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = e ? e : "";
  curl().free(e);
  return out;
}

namespace {

struct FreeCurlUrl {
  void operator()(CURLU* u) const { curl().url_cleanup(u); }
};
using CurlUrl = std::unique_ptr<CURLU, FreeCurlUrl>;

// `url` parsed by libcurl, the same parser that later sends to it; null with
// `why` set when curl refuses it.
CurlUrl parse_url(const std::string& url, std::string& why) {
  CurlUrl u(curl().url());
  if (!u) throw std::bad_alloc();
  if (CURLUcode rc = curl().url_set(u.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK) {
    why = curl().url_strerror(rc);
    return nullptr;
  }
  return u;
}

std::string url_part(CURLU* u, CURLUPart part) {
  char* text = nullptr;
  if (curl().url_get(u, part, &text, 0) != CURLUE_OK || !text) return {};
  std::string out = text;
  curl().free(text);
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
  curl().url_set(u.get(), CURLUPART_USER, nullptr, 0);
  curl().url_set(u.get(), CURLUPART_PASSWORD, nullptr, 0);
  return url_part(u.get(), CURLUPART_URL);
}

}  // namespace pyebpf
