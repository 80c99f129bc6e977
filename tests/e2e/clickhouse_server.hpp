// SPDX-License-Identifier: Apache-2.0
// A real ClickHouse server (Debian's clickhouse-server package) for tests:
// its own temporary directory, config and free loopback ports, started and
// stopped by the test, never a system service.
#pragma once

#include <sys/types.h>

#include <string>

namespace pyebpf::e2e {

class ClickHouseServer {
 public:
  // A user with a password, for the authentication tests.
  static constexpr const char* kUser = "pyebpf_writer";
  static constexpr const char* kPassword = "s3cret pass;word";

  ClickHouseServer();  // starts it; throws std::runtime_error with the server's log on failure
  ~ClickHouseServer();
  ClickHouseServer(const ClickHouseServer&) = delete;
  ClickHouseServer& operator=(const ClickHouseServer&) = delete;

  void start();  // again after stop(): same ports, same data
  void stop();   // SIGTERM, waits for exit (a graceful stop serves open connections for a while)
  void crash();  // SIGKILL: gone at once, as after a crash or a network cut
  bool running() const { return pid_ > 0; }

  std::string url() const;
  std::string version() const { return version_; }
  // Runs `sql` as the password-less default user; returns the body. Throws on error.
  std::string query(const std::string& sql) const;
  long long count(const std::string& table_or_subquery) const;  // SELECT count() FROM ...

 private:
  std::string dir_;
  int http_port_ = 0, tcp_port_ = 0;
  pid_t pid_ = -1;
  std::string version_;
};

}  // namespace pyebpf::e2e
