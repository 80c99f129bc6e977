// SPDX-License-Identifier: Apache-2.0
// Degrade, don't die: a tracker that cannot trace one target, a tracker that
// cannot start, a PID that is no CPython process: each is a warning naming
// tracker, PID and reason, repeated in the end-of-run summary, and the rest
// of the run goes on. The run fails only when nothing can run.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

// A host build without USDT probes (pyenv: uprobes on its .symtab) and a
// Debian build in the sid root with them (but stripped: no uprobes).
PythonBuild with_symtab() {
  for (const auto& b : test_pythons()) {
    if (!b.distro) return b;
  }
  throw std::runtime_error("no pyenv build on this machine");
}

PythonBuild stripped_in_chroot() {
  for (const auto& b : test_pythons()) {
    if (b.setup == RootSetUp::Chroot) return b;
  }
  throw std::runtime_error("no sid root build (tools/install-sid-root)");
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

bool has_events_of(const Pyebpf& pyebpf, const std::string& metric, pid_t pid) {
  for (const auto& e : pyebpf.events(metric)) {
    if (e.at("pid").get<pid_t>() == pid) return true;
  }
  return false;
}

// Runs pyebpf on the workloads until their RESULT, then stops it.
void run(std::vector<Workload*> workloads, Pyebpf& pyebpf) {
  pyebpf.wait_ready();
  for (auto* w : workloads) w->go();
  for (auto* w : workloads) w->result(120s);
  pyebpf.stop();
}

TEST(DegradeE2E, TrackerThatCannotTraceOneTargetTracesTheOthers) {
  Workload symtab(with_symtab(), "gc_pauses.py", {"1", "1000", "1"});
  Workload stripped(stripped_in_chroot(), "gc_pauses.py", {"1", "1000", "1"});
  // USDT only: the pyenv build has none, so gc cannot trace it.
  Pyebpf pyebpf({"-p", std::to_string(symtab.pid()), "-p", std::to_string(stripped.pid()), "-e", "e2e", "--enable",
                 "py_stack", "gc", "--gc-hook", "usdt"});
  run({&symtab, &stripped}, pyebpf);
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  const std::string line = "gc disabled for pid " + std::to_string(symtab.pid()) + ": CPython ";
  EXPECT_EQ(count(err, line), 2u) << "a warning at start, a line in the summary:\n" << err;
  EXPECT_NE(err.find("no python:gc__start/gc__done USDT probes"), std::string::npos) << err;
  EXPECT_TRUE(has_events_of(pyebpf, "gc_pause", stripped.pid())) << err;
  EXPECT_FALSE(has_events_of(pyebpf, "gc_pause", symtab.pid()));
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", symtab.pid())) << "the other trackers trace it";
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", stripped.pid()));
}

TEST(DegradeE2E, TrackerThatCannotStartLeavesTheOthersRunning) {
  Workload stripped(stripped_in_chroot(), "gc_pauses.py", {"1", "1000", "1"});
  // uprobes only: the stripped build has no collector symbol.
  Pyebpf pyebpf(
      {"-p", std::to_string(stripped.pid()), "-e", "e2e", "--enable", "py_stack", "gc", "--gc-hook", "uprobe"});
  run({&stripped}, pyebpf);
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(count(err, "gc disabled: gc: pid " + std::to_string(stripped.pid())), 2u) << err;
  EXPECT_NE(err.find("no symbol gc_collect_main (.symtab stripped)"), std::string::npos) << err;
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", stripped.pid())) << err;
}

TEST(DegradeE2E, PidThatIsNoPythonIsLeftOut) {
  Child sleeper({"sleep", "60"});
  Workload python(stripped_in_chroot(), "cpu_shares.py", {"1"});
  Pyebpf pyebpf(
      {"-p", std::to_string(sleeper.pid()), "-p", std::to_string(python.pid()), "-e", "e2e", "--enable", "py_stack"});
  run({&python}, pyebpf);
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(count(err, "not traced for pid " + std::to_string(sleeper.pid()) + ": pid " +
                           std::to_string(sleeper.pid()) + " (sleep) is not a CPython process"),
            2u)
      << err;
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", python.pid())) << err;
}

TEST(DegradeE2E, RunFailsOnlyWhenNoTrackerCanRun) {
  Workload stripped(stripped_in_chroot(), "gc_pauses.py", {"1", "1000", "1"});
  auto r = run_pyebpf({"-p", std::to_string(stripped.pid()), "-e", "e2e", "--enable", "gc", "gil", "--gc-hook",
                       "uprobe", "--gil-hook", "take_gil", "--duration", "5"});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("pyebpf: error: no tracker can run: gc: pid " + std::to_string(stripped.pid())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; gil: pid " + std::to_string(stripped.pid())), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pyebpf::e2e
