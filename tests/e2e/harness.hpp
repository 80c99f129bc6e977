// SPDX-License-Identifier: Apache-2.0
// End-to-end test harness: real Python processes (workloads that measure
// their own ground truth) and the real pyebpf binary, both as child processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace pyebpf::e2e {

using Json = nlohmann::json;

// Where a target runs: in the host's root, or in the Debian sid root
// (tools/install-sid-root) container-style (own mount and pid namespace,
// pivot_root, own /proc) or by plain chroot (pyebpf's mount namespace).
enum class RootSetUp { Host, Container, Chroot };

// An interpreter the suites run against.
struct PythonBuild {
  std::string label;    // "pyenv-3.11.7", "debian-3.11", "sid-3.14-container"
  std::string path;     // the python executable, as the target sees it
  int minor = 0;        // 3.<minor>
  bool distro = false;  // a Debian package: stripped, statically linked, USDT probes
  RootSetUp setup = RootSetUp::Host;
  std::string root;                                      // the target's root directory unless Host
  std::string host_path() const { return root + path; }  // the executable from pyebpf's side
};

// The Debian sid root the suites run distro builds in, and the minors it has.
std::string sid_root();
constexpr int kSidMinors[] = {13, 14, 15};

// The interpreters present on this machine among those pyebpf supports,
// restricted to minors in [min_minor, max_minor]; the sid root's in both set-ups.
std::vector<PythonBuild> test_pythons(int min_minor = 8, int max_minor = 15);
// One CPython 3.11, for tests of what happens after the events (sinks, files).
PythonBuild python_3_11();

// gtest parameter name: "pyenv_3_11_7".
std::string build_test_name(const PythonBuild& build);
// How gtest prints a build in failure messages: its label and path.
void PrintTo(const PythonBuild& build, std::ostream* os);

std::string workload_path(const std::string& name);  // tests/workloads/<name>
std::string pyebpf_binary();

// A child process with its stdin/stdout/stderr on pipes.
class Child {
 public:
  // With `stdout_file`, the child's stdout goes to that file instead of a
  // pipe, so a child writing a lot never blocks on a reader that is busy.
  Child(const std::vector<std::string>& argv, bool capture_stderr = true, const std::string& stdout_file = {});
  Child(Child&&) = delete;
  ~Child();  // kills the child if still running

  pid_t pid() const { return pid_; }
  // Next stdout line, or nullopt on EOF/timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Reads stdout lines until one starts with `prefix`; returns the rest of it.
  std::optional<std::string> wait_for_line(const std::string& prefix, std::chrono::milliseconds timeout);
  // Reads stderr until it contains `needle`.
  bool wait_for_stderr(const std::string& needle, std::chrono::milliseconds timeout);
  void write_line(const std::string& line);
  void close_stdout();  // parent stops reading (simulates `| head`)
  void signal(int sig);
  // Waits for exit; returns the exit status (128+sig if killed), nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // Everything read so far (stdout lines not consumed by read_line, and stderr).
  std::vector<std::string> drain_stdout_lines(std::chrono::milliseconds timeout);
  const std::string& stderr_text();

 private:
  void pump_stderr(int timeout_ms);
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
  bool out_eof_ = false;
  std::optional<int> status_;
};

// A workload: `python <workload> <args>` printing "READY {json}", then on
// "GO" running its scenario and printing "RESULT {json}".
class Workload {
 public:
  // `launcher` prefixes the command, e.g. {"unshare", "--pid", "--fork"} to run
  // the workload in its own pid namespace like a container.
  Workload(const PythonBuild& python, const std::string& script, const std::vector<std::string>& args = {},
           const std::vector<std::string>& launcher = {});
  // Host pid of the Python process (not of the launcher).
  pid_t pid() const { return pid_; }
  const Json& ready() const { return ready_; }
  void go() { child_.write_line("GO"); }
  Json result(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  Child& child() { return child_; }

 private:
  Child child_;
  Json ready_;
  pid_t pid_ = -1;
};

// pyebpf attached to some PIDs. Its stdout goes to a file (read at the end),
// unless `stdout_pipe` asks for a pipe to read live through child().
class Pyebpf {
 public:
  explicit Pyebpf(const std::vector<std::string>& args, bool stdout_pipe = false);
  ~Pyebpf();
  // Blocks until pyebpf reports it is tracing (or fails the test).
  void wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends SIGINT, waits for exit, parses every stdout line as JSON.
  void stop();
  // Waits for pyebpf to exit by itself (duration, targets gone).
  void wait_exit(std::chrono::milliseconds timeout);

  int exit_status() const { return status_.value_or(-1); }
  const std::vector<Json>& events() const { return events_; }
  std::vector<Json> events(const std::string& metric) const;
  const std::string& stderr_text() { return child_.stderr_text(); }
  Child& child() { return child_; }

 private:
  void collect(std::chrono::milliseconds timeout);
  std::string stdout_file_;
  Child child_;
  std::vector<Json> events_;
  std::optional<int> status_;
};

// The events of one thread, by its tid as the target sees it (what the
// workloads report: the host tid, or the one in the container's pid namespace).
std::vector<Json> of_tid(const std::vector<Json>& events, long tid);

// The rows `sql` selects in the SQLite file at `path`, each column as text
// (a failure is reported and gives no rows).
std::vector<std::vector<std::string>> sqlite_rows(const std::string& path, const std::string& sql);

// pyebpf's end-of-run summary line of `tracker` ("pyebpf: gc: ..."), "" if none.
std::string summary_line(const std::string& stderr_text, const std::string& tracker);
// The number before `label` ("12 lost") in the first of `tracker`'s summary
// lines in `stderr_text` that has one, nullopt if none does.
std::optional<long> summary_count(const std::string& stderr_text, const std::string& tracker, const std::string& label);

// A stack frame as pyebpf prints it, "func (file:line)", for a workload whose
// ground truth holds its "file" and the "lines" of its `# LINE:<marker>`s.
std::string frame_at(const Json& truth, const std::string& func, const std::string& marker);

// `bpftool -j ARGS...`'s JSON (a failure is reported).
Json bpftool(const std::vector<std::string>& args);
// The ids of process `pid`'s BPF maps named `name`, from the map ids in its
// fds' fdinfo: `bpftool map dump name` would also dump the maps of any other
// pyebpf on the host (another test, run in parallel).
std::set<long> maps_named(pid_t pid, const std::string& name);

// The pid of `pid` in its own (innermost) pid namespace: what the target sees as its pid.
long ns_pid(pid_t pid);

// Starts pyebpf's watch of the workload, lets the workload run its scenario
// (GO), stops pyebpf once the workload reported its ground truth (RESULT,
// returned), and expects pyebpf to have exited 0.
Json profile(Workload& workload, Pyebpf& pyebpf, std::chrono::milliseconds timeout = std::chrono::seconds(60));

// tools/test runs the end-to-end tests one per CPU at a time. Each holds a
// shared lock on /tmp/pyebpf-e2e.lock for its whole run (bench/observer takes
// it exclusively, so neither disturbs the other); a test that measures the
// CPUs themselves (a busy target on every CPU, samples per CPU-second) makes
// it exclusive with this guard, for the scope it lives in: the other tests
// finish first, and none starts meanwhile.
class WholeMachine {
 public:
  WholeMachine();
  ~WholeMachine();
  WholeMachine(const WholeMachine&) = delete;
  WholeMachine& operator=(const WholeMachine&) = delete;
};

// Sets an environment variable for the children started in a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// Runs pyebpf to completion (for error cases): exit status and stderr.
struct RunResult {
  int status = -1;
  std::string out;
  std::string err;
};
RunResult run_pyebpf(const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
// Runs any program the same way (its stdout through a file: it may be large).
RunResult run_program(const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A temporary directory, removed with what it holds.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  std::string operator/(const std::string& name) const;

 private:
  std::string path_;
};

std::string slurp(const std::string& path);
// Arguments joined: a + b.
std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b);
std::vector<std::string> split(const std::string& text, char sep);

}  // namespace pyebpf::e2e
