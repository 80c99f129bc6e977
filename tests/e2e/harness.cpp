// SPDX-License-Identifier: Apache-2.0
#include "harness.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

namespace pyebpf::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string pyenv_root() {
  if (const char* env = std::getenv("PYENV_ROOT")) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.pyenv";
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Appends what is readable on fd to buf; returns false on EOF.
bool read_into(int fd, std::string& buf) {
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      buf.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EINTR;
  }
}

}  // namespace

std::vector<PythonBuild> test_pythons(int min_minor, int max_minor) {
  std::vector<PythonBuild> out;
  static const std::regex plain(R"(3\.(\d+)\.(\d+))");
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(pyenv_root() + "/versions", ec)) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    std::smatch m;
    std::string name = dir.filename().string();
    if (!std::regex_match(name, m, plain)) continue;
    int minor = std::stoi(m[1].str());
    if (minor < min_minor || minor > max_minor) continue;
    std::string exe = (dir / "bin" / ("python3." + m[1].str())).string();
    if (fs::exists(exe)) out.push_back({"pyenv-" + name, exe, minor});
  }
  if (11 >= min_minor && 11 <= max_minor && fs::exists("/usr/bin/python3.11"))
    out.push_back({"debian-3.11", "/usr/bin/python3.11", 11, true});
  for (int minor : kSidMinors) {
    const std::string path = "/usr/bin/python3." + std::to_string(minor);
    if (minor < min_minor || minor > max_minor || !fs::exists(sid_root() + path)) continue;
    const std::string label = "sid-3." + std::to_string(minor);
    out.push_back({label + "-container", path, minor, true, RootSetUp::Container, sid_root()});
    out.push_back({label + "-chroot", path, minor, true, RootSetUp::Chroot, sid_root()});
  }
  return out;
}

std::string sid_root() {
  const char* env = std::getenv("PYEBPF_SID_ROOT");
  return env ? env : "/var/cache/pyebpf/sid";
}

std::string build_test_name(const PythonBuild& build) {
  std::string name = build.label;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

void PrintTo(const PythonBuild& build, std::ostream* os) {
  *os << build.label << " (" << build.path << ")";
}

std::string workload_path(const std::string& name) {
  return std::string(PYEBPF_WORKLOADS_DIR) + "/" + name;
}
// $PYEBPF_BINARY runs these tests against another build of pyebpf (tools/test:
// the sanitizer build's) without building them twice.
std::string pyebpf_binary() {
  const char* other = std::getenv("PYEBPF_BINARY");
  return other && *other ? other : PYEBPF_BINARY;
}

Child::Child(const std::vector<std::string>& argv, bool capture_stderr, const std::string& stdout_file) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    if (stdout_file.empty()) {
      dup2(out[1], 1);
    } else {
      int fd = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) _exit(126);
      dup2(fd, 1);
    }
    if (capture_stderr) dup2(err[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  set_nonblocking(out_);
  set_nonblocking(err_);
}

Child::~Child() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {in_, out_, err_}) {
    if (fd >= 0) ::close(fd);
  }
}

void Child::pump_stderr(int timeout_ms) {
  pollfd p{err_, POLLIN, 0};
  if (err_ >= 0 && poll(&p, 1, timeout_ms) > 0 && !read_into(err_, err_buf_)) {
    ::close(err_);
    err_ = -1;
  }
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto nl = out_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      return line;
    }
    if (out_eof_ || out_ < 0) return std::nullopt;
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    int n = poll(fds, err_ >= 0 ? 2 : 1, std::min(remaining_ms(deadline), 200));
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP)) && !read_into(out_, out_buf_)) out_eof_ = true;
    if (err_ >= 0 && n > 0 && (fds[1].revents & (POLLIN | POLLHUP)) && !read_into(err_, err_buf_)) {
      ::close(err_);
      err_ = -1;
    }
    if (remaining_ms(deadline) == 0 && out_buf_.find('\n') == std::string::npos) return std::nullopt;
  }
}

std::optional<std::string> Child::wait_for_line(const std::string& prefix, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (remaining_ms(deadline) > 0) {
    auto line = read_line(std::chrono::milliseconds(remaining_ms(deadline)));
    if (!line) return std::nullopt;
    if (line->rfind(prefix, 0) == 0) return line->substr(prefix.size());
  }
  return std::nullopt;
}

bool Child::wait_for_stderr(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (err_buf_.find(needle) != std::string::npos) return true;
    if (err_ < 0 || remaining_ms(deadline) == 0) return false;
    // Keep stdout flowing too, so a chatty child never blocks on a full pipe.
    if (out_ >= 0 && !out_eof_ && !read_into(out_, out_buf_)) out_eof_ = true;
    pump_stderr(std::min(remaining_ms(deadline), 100));
  }
}

void Child::write_line(const std::string& line) {
  std::string data = line + "\n";
  if (::write(in_, data.data(), data.size()) != static_cast<ssize_t>(data.size()))
    ADD_FAILURE() << "cannot write to child " << pid_;
}

void Child::close_stdout() {
  if (out_ >= 0) ::close(out_);
  out_ = -1;
}

void Child::signal(int sig) {
  if (!status_) ::kill(pid_, sig);
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!status_) {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (remaining_ms(deadline) == 0) return std::nullopt;
    // Drain both pipes meanwhile so the child cannot block on a full pipe.
    if (out_ >= 0 && !out_eof_ && !read_into(out_, out_buf_)) out_eof_ = true;
    pump_stderr(20);
  }
  return status_;
}

std::vector<std::string> Child::drain_stdout_lines(std::chrono::milliseconds timeout) {
  std::vector<std::string> lines;
  while (auto line = read_line(timeout)) lines.push_back(*line);
  return lines;
}

const std::string& Child::stderr_text() {
  // After exit, read to EOF (bounded: a grandchild could hold the pipe open).
  for (int i = 0; err_ >= 0 && i < (status_ ? 50 : 1); ++i) pump_stderr(status_ ? 100 : 0);
  return err_buf_;
}

namespace {

// The first descendant of `pid` (itself included) running `exe` (a path
// from this process's root; /proc/PID/exe leads to the file whatever root
// the process has).
pid_t find_process_running(pid_t pid, const std::string& exe) {
  std::error_code ec;
  if (fs::equivalent("/proc/" + std::to_string(pid) + "/exe", exe, ec)) return pid;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child;
  while (children >> child) {
    if (pid_t found = find_process_running(child, exe); found > 0) return found;
  }
  return -1;
}

// The workloads as a target in `root` sees them: copied into the root (the
// same for both set-ups, and the chroot shares pyebpf's mount namespace).
// Each file is replaced by rename, so a concurrent test never reads half a file.
std::string workloads_in(const std::string& root) {
  const std::string dir = "/pyebpf-workloads";
  static std::set<std::string> done;
  if (done.insert(root).second) {
    fs::create_directories(root + dir);
    for (const auto& entry : fs::directory_iterator(PYEBPF_WORKLOADS_DIR)) {
      if (entry.path().extension() != ".py") continue;
      const std::string target = root + dir + "/" + entry.path().filename().string();
      const std::string tmp = target + ".tmp" + std::to_string(getpid());
      fs::copy_file(entry.path(), tmp, fs::copy_options::overwrite_existing);
      fs::rename(tmp, target);
    }
  }
  return dir;
}

std::vector<std::string> workload_argv(const PythonBuild& python, const std::string& script,
                                       const std::vector<std::string>& launcher) {
  std::vector<std::string> argv = launcher;
  if (python.setup == RootSetUp::Host) {
    argv.insert(argv.end(), {python.path, "-u", workload_path(script)});
  } else {
    const char* mode = python.setup == RootSetUp::Container ? "container" : "chroot";
    argv.insert(argv.end(),
                {PYEBPF_IN_ROOT, mode, python.root, "--", python.path, "-u", workloads_in(python.root) + "/" + script});
  }
  return argv;
}

}  // namespace

Workload::Workload(const PythonBuild& python, const std::string& script, const std::vector<std::string>& args,
                   const std::vector<std::string>& launcher)
    : child_([&] {
        std::vector<std::string> argv = workload_argv(python, script, launcher);
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
      }()) {
  auto line = child_.wait_for_line("READY ", std::chrono::seconds(30));
  if (!line) throw std::runtime_error("workload " + script + " never became ready: " + child_.stderr_text());
  ready_ = Json::parse(*line);
  pid_ = find_process_running(child_.pid(), python.host_path());
  if (pid_ <= 0) throw std::runtime_error("cannot find the Python process of workload " + script);
}

Json Workload::result(std::chrono::milliseconds timeout) {
  auto line = child_.wait_for_line("RESULT ", timeout);
  if (!line) throw std::runtime_error("workload gave no RESULT: " + child_.stderr_text());
  return Json::parse(*line);
}

namespace {

std::string temp_path(const char* stem) {
  static int counter = 0;
  return (fs::temp_directory_path() /
          (std::string(stem) + std::to_string(getpid()) + "-" + std::to_string(++counter) + ".jsonl"))
      .string();
}

}  // namespace

Pyebpf::Pyebpf(const std::vector<std::string>& args, bool stdout_pipe)
    : stdout_file_(stdout_pipe ? std::string() : temp_path("pyebpf-e2e-")),
      child_(
          [&] {
            std::vector<std::string> argv{pyebpf_binary()};
            argv.insert(argv.end(), args.begin(), args.end());
            return argv;
          }(),
          true, stdout_file_) {}

Pyebpf::~Pyebpf() {
  if (!stdout_file_.empty()) ::unlink(stdout_file_.c_str());
}

void Pyebpf::wait_ready(std::chrono::milliseconds timeout) {
  if (!child_.wait_for_stderr("pyebpf: info: tracing", timeout))
    FAIL() << "pyebpf did not start tracing; stderr:\n" << child_.stderr_text();
}

void Pyebpf::collect(std::chrono::milliseconds timeout) {
  auto st = child_.wait(timeout);
  if (!st) {
    child_.signal(SIGKILL);
    st = child_.wait(std::chrono::seconds(5));
    ADD_FAILURE() << "pyebpf did not exit in time";
  }
  status_ = st;
  std::vector<std::string> lines;
  if (stdout_file_.empty()) {
    lines = child_.drain_stdout_lines(std::chrono::milliseconds(100));
  } else {
    std::ifstream in(stdout_file_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  for (const auto& line : lines) {
    auto j = Json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "pyebpf printed a line that is not JSON: " << line;
      continue;
    }
    events_.push_back(std::move(j));
  }
}

Json profile(Workload& workload, Pyebpf& pyebpf, std::chrono::milliseconds timeout) {
  pyebpf.wait_ready();
  workload.go();
  Json result = workload.result(timeout);
  pyebpf.stop();
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  return result;
}

void Pyebpf::stop() {
  child_.signal(SIGINT);
  collect(std::chrono::seconds(30));
}

void Pyebpf::wait_exit(std::chrono::milliseconds timeout) {
  collect(timeout);
}

std::vector<Json> Pyebpf::events(const std::string& metric) const {
  std::vector<Json> out;
  for (const auto& e : events_) {
    if (e.value("metric", "") == metric) out.push_back(e);
  }
  return out;
}

std::vector<std::vector<std::string>> sqlite_rows(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::vector<std::string>> rows;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << path;
    sqlite3_close(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db) << " in " << sql;
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        auto* t = sqlite3_column_text(s, i);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows;
}

namespace {

int machine_lock() {
  static const int fd = ::open("/tmp/pyebpf-e2e.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  return fd;
}

// Every test's share of the machine: the shared lock, from before the test to the process's end.
class SharedMachine : public ::testing::Environment {
 public:
  void SetUp() override {
    if (machine_lock() < 0 || ::flock(machine_lock(), LOCK_SH) != 0)
      ADD_FAILURE() << "/tmp/pyebpf-e2e.lock: " << std::strerror(errno);
  }
};

[[maybe_unused]] ::testing::Environment* const kSharedMachine = ::testing::AddGlobalTestEnvironment(new SharedMachine);

}  // namespace

// flock() converts the test's shared lock (not atomically: it waits as any
// other exclusive locker once its shared lock is gone), and back.
WholeMachine::WholeMachine() {
  if (::flock(machine_lock(), LOCK_EX) != 0) ADD_FAILURE() << "flock /tmp/pyebpf-e2e.lock: " << std::strerror(errno);
}

WholeMachine::~WholeMachine() {
  ::flock(machine_lock(), LOCK_SH);
}

std::string summary_line(const std::string& stderr_text, const std::string& tracker) {
  auto pos = stderr_text.find("pyebpf: " + tracker + ":");
  if (pos == std::string::npos) return "";
  return stderr_text.substr(pos, stderr_text.find('\n', pos) - pos);
}

std::optional<long> summary_count(const std::string& stderr_text, const std::string& tracker,
                                  const std::string& label) {
  std::smatch m;
  if (!std::regex_search(stderr_text, m, std::regex("pyebpf: " + tracker + ": .*?(\\d+) " + label)))
    return std::nullopt;
  return std::stol(m[1].str());
}

std::vector<Json> of_tid(const std::vector<Json>& events, long tid) {
  std::vector<Json> out;
  for (const auto& e : events) {
    if (e.at("container_tid").get<long>() == tid) out.push_back(e);
  }
  return out;
}

std::string frame_at(const Json& truth, const std::string& func, const std::string& marker) {
  return func + " (" + truth.at("file").get<std::string>() + ":" +
         std::to_string(truth.at("lines").at(marker).get<int>()) + ")";
}

long ns_pid(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  long last = pid;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream ids(line.substr(6));
    for (long id; ids >> id;) last = id;
  }
  return last;
}

RunResult run_pyebpf(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{pyebpf_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, timeout);
}

RunResult run_program(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const std::string out = temp_path("pyebpf-run-");
  RunResult r;
  {
    Child child(argv, true, out);
    auto st = child.wait(timeout);
    if (!st) {
      child.signal(SIGKILL);
      st = child.wait(std::chrono::seconds(5));
    }
    r.status = st.value_or(-1);
    r.err = child.stderr_text();
  }
  r.out = slurp(out);
  ::unlink(out.c_str());
  return r;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/pyebpf-e2e-XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  fs::remove_all(path_);
}

std::string TempDir::operator/(const std::string& name) const {
  return (fs::path(path_) / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

PythonBuild python_3_11() {
  auto builds = test_pythons(11, 11);
  if (builds.empty()) throw std::runtime_error("no CPython 3.11 on this machine");
  return builds.front();
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

Json bpftool(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"bpftool", "-j"};
  argv.insert(argv.end(), args.begin(), args.end());
  Child run(argv);
  std::string text;
  for (const auto& line : run.drain_stdout_lines(std::chrono::seconds(10))) text += line;
  EXPECT_EQ(run.wait(std::chrono::seconds(10)), 0) << run.stderr_text();
  return Json::parse(text);
}

std::set<long> maps_named(pid_t pid, const std::string& name) {
  std::set<long> ids, named;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo")) {
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("map_id:", 0) == 0) ids.insert(std::stol(line.substr(7)));
    }
  }
  for (const auto& map : bpftool({"map", "show"})) {
    if (map.value("name", "") == name && ids.count(map.at("id").get<long>())) named.insert(map.at("id").get<long>());
  }
  return named;
}

}  // namespace pyebpf::e2e
