// SPDX-License-Identifier: Apache-2.0
#include "clickhouse_server.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pyebpf::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) || getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) {
    close(fd);
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// POST `sql` to `url`; returns (HTTP status, body); status 0 if no answer.
std::pair<long, std::string> post(const std::string& url, const std::string& sql) {
  CURL* c = curl_easy_init();
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, sql.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return {status, body};
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

ClickHouseServer::ClickHouseServer() {
  char tmpl[] = "/tmp/pyebpf-clickhouse-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  http_port_ = free_port();
  tcp_port_ = free_port();
  std::ofstream(dir_ + "/config.xml")
      << "<?xml version=\"1.0\"?>\n<yandex>\n"
      << "  <logger><level>warning</level><log>" << dir_ << "/server.log</log><errorlog>" << dir_
      << "/server.err.log</errorlog><console>0</console></logger>\n"
      << "  <http_port>" << http_port_ << "</http_port>\n  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
      << "  <listen_host>127.0.0.1</listen_host>\n"
      << "  <path>" << dir_ << "/data/</path>\n  <tmp_path>" << dir_ << "/tmp/</tmp_path>\n"
      << "  <user_files_path>" << dir_ << "/user_files/</user_files_path>\n"
      << "  <format_schema_path>" << dir_ << "/format_schemas/</format_schema_path>\n"
      << "  <users_config>users.xml</users_config>\n  <default_profile>default</default_profile>\n"
      << "  <default_database>default</default_database>\n  <timezone>UTC</timezone>\n"
      << "  <mark_cache_size>104857600</mark_cache_size>\n  <mlock_executable>false</mlock_executable>\n"
      << "</yandex>\n";
  auto user = [](const std::string& name, const std::string& password) {
    return "    <" + name + "><password>" + password + "</password><networks><ip>127.0.0.1</ip></networks>" +
           "<profile>default</profile><quota>default</quota></" + name + ">\n";
  };
  std::ofstream(dir_ + "/users.xml") << "<?xml version=\"1.0\"?>\n<yandex>\n  <profiles><default/></profiles>\n"
                                     << "  <users>\n"
                                     << user("default", "") << user(kUser, kPassword)
                                     << "  </users>\n  <quotas><default/></quotas>\n</yandex>\n";
  start();
}

ClickHouseServer::~ClickHouseServer() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string ClickHouseServer::url() const {
  return "http://127.0.0.1:" + std::to_string(http_port_);
}

void ClickHouseServer::start() {
  if (pid_ > 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    int out = open((dir_ + "/stdout.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(out, 2);
    setpgid(0, 0);
    execlp("clickhouse-server", "clickhouse-server", ("--config-file=" + dir_ + "/config.xml").c_str(), nullptr);
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto [status, body] = post(url() + "/", "SELECT version()");
    if (status == 200) {
      version_ = body.substr(0, body.find('\n'));
      return;
    }
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("clickhouse-server exited at start: " + read_file(dir_ + "/stdout.log") +
                               read_file(dir_ + "/server.err.log"));
    }
    std::this_thread::sleep_for(200ms);
  }
  stop();
  throw std::runtime_error("clickhouse-server did not answer in 90 s: " + read_file(dir_ + "/server.err.log"));
}

void ClickHouseServer::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 300; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(100ms);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ClickHouseServer::crash() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ClickHouseServer::query(const std::string& sql) const {
  auto [status, body] = post(url() + "/", sql);
  if (status != 200)
    throw std::runtime_error("ClickHouse query failed (" + std::to_string(status) + "): " + sql + ": " + body);
  return body;
}

long long ClickHouseServer::count(const std::string& from) const {
  return std::stoll(query("SELECT count() FROM " + from));
}

}  // namespace pyebpf::e2e
