// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pyebpf {

// What an HTTP request came back with. `status` 0: no response (refused,
// timed out, DNS...), `error` then says why.
struct HttpResponse {
  long status = 0;
  std::string body;
  std::string error;
  bool ok() const { return status >= 200 && status < 300; }
};

// A blocking HTTP client over libcurl (loaded at first use; a missing libcurl
// is a pyebpf::Error naming the package), one connection kept alive between
// requests. Not thread-safe: one per thread. Credentials are given to curl
// only (Basic auth), never formatted into URLs or messages.
class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void set_credentials(std::string user, std::string password);
  // Polled during transfers (about once a second or faster): true aborts the
  // request in flight (e.g. a second Ctrl-C while flushing at exit).
  void set_abort(std::function<bool()> should_abort);
  HttpResponse post(const std::string& url, std::string_view body,
                    const std::vector<std::pair<std::string, std::string>>& headers, std::chrono::milliseconds timeout);

  // "a b" -> "a%20b", for query strings.
  static std::string escape(std::string_view text);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Why `url` is not an http(s) URL with a host ("got scheme 'ftp'"), or
// nothing when it is one.
std::optional<std::string> http_url_problem(const std::string& url);

// Whether `url` carries a user or password ("http://u:p@host").
bool url_has_credentials(const std::string& url);

// `url` with any "user:password@" removed, for messages.
std::string redact_url(const std::string& url);

}  // namespace pyebpf
