// SPDX-License-Identifier: Apache-2.0
// The command line end to end: bad input fails fast with one clear line and a
// non-zero exit; signals and a closed stdout end runs cleanly.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

// One non-empty line, starting "pyebpf: error: ", containing `needle`.
void expect_one_line_error(const RunResult& r, const std::string& needle) {
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "") << "nothing on stdout";
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line expected:\n" << r.err;
  EXPECT_EQ(err.rfind("pyebpf: error: ", 0), 0u) << err;
  EXPECT_NE(err.find(needle), std::string::npos) << err;
}

PythonBuild any_python() {
  auto pythons = test_pythons();
  if (pythons.empty()) throw std::runtime_error("no Python to test with");
  return pythons.back();
}

TEST(CliE2E, EverySupportedPythonOnThisMachineIsTested) {
  // pyenv builds of supported minors present here must all be in the suites.
  std::vector<std::string> tested;
  for (const auto& p : test_pythons()) tested.push_back(p.label);
  std::string root = std::getenv("PYENV_ROOT") ? std::getenv("PYENV_ROOT") : "/root/.pyenv";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/versions", ec)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    static const std::regex supported(R"(3\.(8|9|10|11|12|13|14|15)\.\d+)");
    if (!std::regex_match(name, m, supported)) continue;
    EXPECT_NE(std::find(tested.begin(), tested.end(), "pyenv-" + name), tested.end()) << name << " was skipped";
  }
  // Debian sid's own builds, which tools/install-deps puts on every test
  // machine, in a container-style root and by plain chroot.
  EXPECT_TRUE(std::filesystem::exists(sid_root() + "/.pyebpf-sid-root"))
      << sid_root() << " is missing: run tools/install-deps (tools/install-sid-root)";
  for (int minor : kSidMinors) {
    for (const char* setup : {"container", "chroot"}) {
      std::string label = "sid-3." + std::to_string(minor) + "-" + setup;
      EXPECT_NE(std::find(tested.begin(), tested.end(), label), tested.end()) << label << " was skipped";
    }
  }
  std::string list;
  for (const auto& t : tested) list += " " + t;
  std::cout << "[ PYTHONS ] end-to-end suites run on:" << list << std::endl;
  EXPECT_GE(tested.size(), 2u);
}

TEST(CliE2E, MissingPidIsOneClearLine) {
  expect_one_line_error(run_pyebpf({"-p", "999999", "-e", "t"}), "pid 999999 does not exist");
}

TEST(CliE2E, NonPythonProcessIsOneClearLine) {
  Child sleeper({"sleep", "30"});
  expect_one_line_error(run_pyebpf({"-p", std::to_string(sleeper.pid()), "-e", "t"}), "is not a CPython process");
}

TEST(CliE2E, UnsupportedPythonVersionsAreNamed) {
  std::string root = std::getenv("PYENV_ROOT") ? std::getenv("PYENV_ROOT") : "/root/.pyenv";
  int checked = 0;
  for (const char* v : {"2.7.18", "3.6.15", "3.7.16"}) {
    std::string minor = std::string(v).substr(0, std::string(v).rfind('.'));
    std::string exe = root + "/versions/" + v + "/bin/python" + minor;
    if (!std::filesystem::exists(exe)) continue;
    Child python({exe, "-c", "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(30)"});
    ASSERT_TRUE(python.read_line(10s));
    expect_one_line_error(run_pyebpf({"-p", std::to_string(python.pid()), "-e", "t"}), "runs CPython " + minor);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no unsupported Python installed to try";
}

TEST(CliE2E, UnknownAndUnimplementedTrackersAreRejectedBeforeAttaching) {
  expect_one_line_error(run_pyebpf({"-p", "1", "-e", "t", "--enable", "nope"}), "unknown tracker 'nope'");
}

TEST(CliE2E, UsageErrorsAreOneLine) {
  auto r = run_pyebpf({"-p", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--env is required"), std::string::npos) << r.err;
  auto f = run_pyebpf({"-p", "1", "-e", "t", "--pystack-frequency", "0"});
  EXPECT_EQ(f.status, 2);
  EXPECT_NE(f.err.find("pystack-frequency"), std::string::npos) << f.err;
}

// docs/errors.md is the table of bad inputs and pyebpf's exact answer to
// each; commands there are written from the repository's top directory.
TEST(CliE2E, EveryDocumentedBadInputGetsItsMessage) {
  const std::string source = PYEBPF_SOURCE_DIR;
  std::ifstream doc(source + "/docs/errors.md");
  ASSERT_TRUE(doc) << "docs/errors.md is missing";
  auto in_repo = [&](std::string text) {
    const std::string fixtures = "tests/fixtures/";
    for (std::size_t at = 0; (at = text.find(fixtures, at)) != std::string::npos;) {
      text.insert(at, source + "/");
      at += source.size() + 1 + fixtures.size();
    }
    return text;
  };
  static const std::regex row(R"(^\| `pyebpf ?([^`]*)` \| (\d) \| `(.*)` \|$)");
  std::string line;
  int rows = 0;
  while (std::getline(doc, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    ++rows;
    std::vector<std::string> args;
    std::istringstream words(in_repo(m[1]));
    for (std::string w; words >> w;) args.push_back(w);
    RunResult r = run_pyebpf(args);
    EXPECT_EQ(r.err, in_repo(m[3]) + "\n") << "pyebpf " << m[1];
    EXPECT_EQ(r.status, std::stoi(m[2])) << "pyebpf " << m[1];
    EXPECT_EQ(r.out, "") << "pyebpf " << m[1];
  }
  EXPECT_GE(rows, 20) << "rows of docs/errors.md not recognised";
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A password given on the command line is readable nowhere pyebpf writes or
// shows: ps, stderr at -vv (libbpf and curl chatter included), stdout, and the
// SQLite file with its run table and summary.
TEST(CliE2E, APasswordIsInNoLogPsOrStoredRun) {
  const std::string secret = "S3cret-token-4242";
  const std::string db = "/tmp/pyebpf-secrets-" + std::to_string(getpid()) + ".db";
  Workload workload(any_python(), "named_threads.py", {"2", "Alpha"});
  // Nothing listens on port 9: the ClickHouse sink warns and keeps going.
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "secrets", "--enable", "py_stack", "gc", "-vv",
                 "--also-stdout", "--sqlite", db, "--clickhouse-url", "http://127.0.0.1:9", "--clickhouse-password",
                 secret, "--flush-timeout", "0"});
  pyebpf.wait_ready();
  const std::string cmdline = file_bytes("/proc/" + std::to_string(pyebpf.child().pid()) + "/cmdline");
  EXPECT_EQ(cmdline.find(secret), std::string::npos) << "readable in /proc/PID/cmdline";
  workload.go();
  workload.result();
  pyebpf.stop();
  EXPECT_FALSE(pyebpf.events("py_stack").empty()) << pyebpf.stderr_text();
  EXPECT_EQ(pyebpf.stderr_text().find(secret), std::string::npos) << "printed on stderr";
  for (const auto& e : pyebpf.events()) EXPECT_EQ(e.dump().find(secret), std::string::npos) << e.dump();
  std::string stored;
  for (const char* suffix : {"", "-wal", "-shm"}) stored += file_bytes(db + suffix);
  EXPECT_NE(stored.find("--clickhouse-password ***"), std::string::npos) << "the run's command line is stored";
  EXPECT_EQ(stored.find(secret), std::string::npos) << "stored in " << db;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}

TEST(CliE2E, NotRootIsOneClearLine) {
  if (!std::filesystem::exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) missing";
  RunResult r;
  {
    Child child({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                 pyebpf_binary(), "-p", "1", "-e", "t"});
    r.status = child.wait(30s).value_or(-1);
    r.err = child.stderr_text();
  }
  expect_one_line_error(r, "needs root");
}

TEST(CliE2E, ClosedStdoutEndsQuietly) {
  Workload workload(any_python(), "cpu_shares.py", {"600"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "t"}, /*stdout_pipe=*/true);
  pyebpf.wait_ready();
  workload.go();
  ASSERT_TRUE(pyebpf.child().read_line(30s)) << "no event before closing";
  pyebpf.child().close_stdout();  // like `pyebpf ... | head -1`
  auto status = pyebpf.child().wait(30s);
  ASSERT_TRUE(status) << "pyebpf kept running with stdout closed";
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(pyebpf.stderr_text().find("error"), std::string::npos) << pyebpf.stderr_text();
}

TEST(CliE2E, SigtermFlushesAndPrintsTheSummary) {
  Workload workload(any_python(), "cpu_shares.py", {"600"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "t"});
  pyebpf.wait_ready();
  workload.go();
  std::this_thread::sleep_for(1500ms);
  pyebpf.child().signal(SIGTERM);
  pyebpf.wait_exit(30s);
  EXPECT_EQ(pyebpf.exit_status(), 0);
  const std::string& err = pyebpf.stderr_text();
  EXPECT_NE(err.find("received SIGTERM"), std::string::npos) << err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(err, m, std::regex(R"(py_stack: (\d+) samples of target threads, (\d+) emitted, (\d+) lost)")))
      << err;
  EXPECT_EQ(std::stoul(m[2].str()), pyebpf.events("py_stack").size()) << "every emitted event reached stdout";
  EXPECT_EQ(m[3].str(), "0");
  EXPECT_NE(err.find("pid " + std::to_string(workload.pid()) + " ("), std::string::npos) << err;
}

}  // namespace
}  // namespace pyebpf::e2e
