// pyebpf top end to end: a workload spinning in a known function, watched
// through a pipe (plain-text snapshots) and in a real terminal (tmux, 80x24),
// driven by keys as a person would, and left with a sane shell.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// "inner (known_lines.py:11)": how top names the workload's spinning function.
std::string hot_function(const Workload& workload) {
  return "inner (known_lines.py:" + std::to_string(workload.ready().at("first_lines").at("inner").get<int>()) + ")";
}

// With an output beside the view: what was seen is also kept.
TEST(TopE2E, SnapshotsOnAPipeNameTheHotFunctionAndOutputsAreWritten) {
  const std::string db = ::testing::TempDir() + "pyebpf-top-" + std::to_string(getpid()) + ".db";
  std::filesystem::remove(db);
  Workload workload(python_3_11(), "known_lines.py", {"6"});
  Child top({pyebpf_binary(), "top", "-p", std::to_string(workload.pid()), "--refresh", "0.5", "--enable", "py_stack",
             "offcpu", "--sqlite", db});
  ASSERT_TRUE(top.wait_for_stderr("tracing", 30s)) << top.stderr_text();
  workload.go();
  // A snapshot whose top row is the spinning function, nearly all of the CPU.
  const std::string hot = hot_function(workload);
  std::optional<std::string> row;
  for (const auto deadline = Clock::now() + 5s; !row && Clock::now() < deadline;) {
    auto line = top.read_line(1s);
    if (line && line->find(hot) != std::string::npos && line->find("100.0%") != std::string::npos) row = line;
  }
  ASSERT_TRUE(row) << "no snapshot showed " << hot << " at 100% self\n" << top.stderr_text();
  top.signal(SIGINT);
  EXPECT_EQ(top.wait(30s), 0) << top.stderr_text();
  EXPECT_NE(top.stderr_text().find("pyebpf: py_stack:"), std::string::npos) << "the end-of-run summary still comes";
  const auto rows =
      sqlite_rows(db, "SELECT COUNT(*), SUM(stack LIKE '%inner (%') FROM ebpf_py_stacks WHERE env = 'top'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_GT(std::stol(rows[0][0]), 10) << "the samples are stored too";
  EXPECT_GT(std::stol(rows[0][1]), 10);
  std::filesystem::remove(db);
}

// A tmux server of its own, one 80x24 window running a plain shell.
class Tmux {
 public:
  Tmux() : socket_("pyebpf-top-test-" + std::to_string(getpid())) {
    run({"new-session", "-d", "-x", "80", "-y", "24", "-s", "t",
         "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "
         "TERM=screen NO_COLOR=1 PS1='$ ' bash --norc "
         "--noprofile"});
  }
  ~Tmux() { run({"kill-server"}); }
  void type(const std::string& keys, bool enter) {
    std::vector<std::string> args{"send-keys", "-t", "t", "-l", keys};
    run(args);
    if (enter) run({"send-keys", "-t", "t", "Enter"});
  }
  void key(const std::string& name) { run({"send-keys", "-t", "t", name}); }
  std::string screen() { return run({"capture-pane", "-p", "-t", "t"}); }
  // Waits until the screen contains `needle`; returns the screen then.
  std::optional<std::string> wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
    for (const auto deadline = Clock::now() + timeout; Clock::now() < deadline;) {
      std::string s = screen();
      if (s.find(needle) != std::string::npos) return s;
      std::this_thread::sleep_for(100ms);
    }
    return std::nullopt;
  }

 private:
  std::string run(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"tmux", "-L", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    Child child(argv);
    std::string out;
    for (const auto& line : child.drain_stdout_lines(10s)) out += line + "\n";
    EXPECT_EQ(child.wait(10s), 0) << "tmux " << args.front() << ": " << child.stderr_text();
    return out;
  }
  std::string socket_;
};

// pyebpf top in a tmux window on a workload spinning for `seconds`, once its
// view shows the spinning function (within 3 s of its first screen).
class TopTerminalE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/tmux"))
      GTEST_SKIP() << "tmux is not installed (tools/install-deps installs it)";
  }
  void start(int seconds) {
    workload_.emplace(python_3_11(), "known_lines.py", std::vector<std::string>{std::to_string(seconds)});
    workload_->go();
    tmux_.emplace();
    ASSERT_TRUE(tmux_->wait_for("$", 5s)) << tmux_->screen();
    tmux_->type(pyebpf_binary() + " top -p " + std::to_string(workload_->pid()) + "; echo EXIT=$?", true);
    ASSERT_TRUE(tmux_->wait_for("pyebpf top:", 30s)) << tmux_->screen();
    auto screen = tmux_->wait_for(hot_function(*workload_), 3s);
    ASSERT_TRUE(screen) << tmux_->screen();
    EXPECT_NE(screen->find("SELF*"), std::string::npos) << *screen;
    EXPECT_NE(screen->find("MainThread"), std::string::npos) << *screen;
  }
  // pyebpf ended with `status` and gave the terminal back: its screen is
  // gone, and echo and canonical input are on as the shell had them.
  void expect_shell_back(int status) {
    auto screen = tmux_->wait_for("EXIT=" + std::to_string(status), 10s);
    ASSERT_TRUE(screen) << tmux_->screen();
    EXPECT_EQ(screen->find("SELF"), std::string::npos) << "the view's screen is gone:\n" << *screen;
    tmux_->type("stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo \"ST\"\"TY\"", true);
    EXPECT_TRUE(tmux_->wait_for("icanon echo STTY", 5s)) << tmux_->screen();
  }
  pid_t top_pid() {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::ifstream cmdline(entry.path() / "cmdline");
      std::string args;
      std::getline(cmdline, args);
      if (args.find("top") != std::string::npos && args.rfind(pyebpf_binary(), 0) == 0 &&
          args.find(std::to_string(workload_->pid())) != std::string::npos)
        return static_cast<pid_t>(std::stol(entry.path().filename().string()));
    }
    return 0;
  }
  std::optional<Workload> workload_;
  std::optional<Tmux> tmux_;
};

TEST_F(TopTerminalE2E, KeysSortAndFilterThenQLeavesASaneShell) {
  ASSERT_NO_FATAL_FAILURE(start(30));
  tmux_->key("t");  // sort by total: the header marks it
  EXPECT_TRUE(tmux_->wait_for("TOTAL*", 3s)) << tmux_->screen();
  tmux_->key("f");  // the busiest thread only: the workload's main thread
  EXPECT_TRUE(tmux_->wait_for("[thread " + std::to_string(workload_->pid()) + " MainThread]", 3s)) << tmux_->screen();
  tmux_->key("q");
  expect_shell_back(0);
}

TEST_F(TopTerminalE2E, CtrlCLeavesASaneShell) {
  ASSERT_NO_FATAL_FAILURE(start(30));
  tmux_->key("C-c");
  expect_shell_back(0);
}

TEST_F(TopTerminalE2E, SigtermLeavesASaneShell) {
  ASSERT_NO_FATAL_FAILURE(start(30));
  const pid_t pid = top_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  expect_shell_back(0);
}

TEST_F(TopTerminalE2E, TargetExitEndsTheViewAndLeavesASaneShell) {
  ASSERT_NO_FATAL_FAILURE(start(30));
  workload_->child().signal(SIGKILL);
  expect_shell_back(0);
}

}  // namespace
}  // namespace pyebpf::e2e
