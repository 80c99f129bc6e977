// SPDX-License-Identifier: Apache-2.0
// pyebpf dump end to end: threads stuck in known places (tests/workloads/
// hung.py says where, and what on), dumped on every Python this machine has.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

// The thread_dump objects of one `pyebpf dump --json`, by thread name.
std::map<std::string, Json> dump_threads(pid_t pid) {
  RunResult r = run_pyebpf({"dump", "-p", std::to_string(pid), "--json"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<std::string, Json> out;
  for (const auto& line : split(r.out, '\n')) {
    if (line.empty()) continue;
    Json j = Json::parse(line);
    EXPECT_EQ(j.at("metric"), "thread_dump") << line;
    out[j.at("thread_name").get<std::string>()] = j;
  }
  return out;
}

std::string leaf(const Json& thread) {
  const std::string stack = thread.at("py_stack");
  auto pos = stack.rfind(';');
  return pos == std::string::npos ? stack : stack.substr(pos + 1);
}

bool kernel_has(const Json& thread, const std::string& needle) {
  for (const auto& f : thread.at("kernel_stack"))
    if (f.get<std::string>().find(needle) != std::string::npos) return true;
  return false;
}

class DumpE2E : public ::testing::TestWithParam<PythonBuild> {};

// Each blocked thread is in the dump with its state, how long it has been in
// it, the line it waits on, what it waits on and the kernel path of the wait.
TEST_P(DumpE2E, BlockedThreadsShowWhereAndOnWhatTheyWait) {
  Workload workload(GetParam(), "hung.py", {"locks"});
  const Json& truth = workload.ready();
  auto threads = dump_threads(workload.pid());
  for (const auto& [name, facts] : truth.at("threads").items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(threads.count(name)) << "thread missing from the dump";
    const Json& t = threads.at(name);
    EXPECT_EQ(t.at("container_tid"), facts.at("tid"));
    EXPECT_EQ(t.at("pid"), workload.pid());
    EXPECT_EQ(t.at("state"), "sleeping") << t;
    // Blocked since before READY, which came 0.3 s after the last one got
    // there; MainThread reads stdin only after READY.
    if (name != "MainThread") {
      EXPECT_GE(t.at("state_ms").get<double>(), 200.0) << t;
    }
    EXPECT_FALSE(t.at("kernel_stack").empty()) << t;
  }
  const auto& lines = truth.at("lines");
  const std::string file = truth.at("file");
  auto at_line = [&](const Json& t, const char* marker) {
    return leaf(t).find("(" + file + ":" + lines.at(marker).dump() + ")") != std::string::npos;
  };

  const Json& reader = threads.at("Reader");
  EXPECT_TRUE(at_line(reader, "recv")) << reader;
  EXPECT_EQ(reader.at("wait_kind"), "socket") << reader;
  EXPECT_EQ(reader.at("wait_object").at("local"), truth.at("threads").at("Reader").at("local")) << reader;
  EXPECT_EQ(reader.at("wait_object").at("peer"), truth.at("threads").at("Reader").at("peer")) << reader;
  EXPECT_EQ(reader.at("wait_object").at("state"), "ESTABLISHED") << reader;
  EXPECT_TRUE(kernel_has(reader, "sk_wait_data")) << reader;

  const Json& sleeper = threads.at("Sleeper");
  EXPECT_TRUE(at_line(sleeper, "sleep")) << sleeper;
  EXPECT_EQ(sleeper.at("wait_kind"), "sleep") << sleeper;
  const double left = sleeper.at("wait_object").at("left_ms");
  EXPECT_GT(left, 900e3) << sleeper;
  EXPECT_LE(left, 1000e3) << sleeper;
  // 3.11+ sleep in clock_nanosleep, earlier ones in select on no fds.
  EXPECT_TRUE(kernel_has(sleeper, "nanosleep") || kernel_has(sleeper, "select")) << sleeper;

  auto tid_of = [&](const char* name) { return threads.at(name).at("tid"); };
  for (const char* name : {"Deadlock-A", "Deadlock-B", "RDeadlock-A", "RDeadlock-B", "Waiter-1", "Waiter-2"}) {
    SCOPED_TRACE(name);
    const Json& t = threads.at(name);
    const Json& facts = truth.at("threads").at(name);
    EXPECT_EQ(t.at("syscall"), "futex") << t;
    EXPECT_TRUE(at_line(t, std::string(name).find("Waiter") == 0 ? "shared" : "deadlock")) << t;
    EXPECT_TRUE(kernel_has(t, "futex_wait")) << t;
    EXPECT_EQ(t.at("gil"), nullptr) << "blocked threads neither hold nor wait for the GIL: " << t;
    // The lock object itself, matched to the futex word, not guessed.
    EXPECT_EQ(t.at("wait_kind"), "lock") << t;
    EXPECT_EQ(t.at("wait_object").at("address"), facts.at("waits_on")) << t;
    EXPECT_EQ(t.at("wait_object").at("type"), name[0] == 'R' ? "threading.RLock" : "threading.Lock") << t;
  }
  // Each deadlocked pair waits for the other: an RLock records its owner,
  // a Lock's holder is the thread inside a `with` block on it.
  for (const auto& [a, b] : {std::pair{"Deadlock-A", "Deadlock-B"}, std::pair{"RDeadlock-A", "RDeadlock-B"}}) {
    for (const auto& [me, other] : {std::pair{a, b}, std::pair{b, a}}) {
      SCOPED_TRACE(me);
      const Json& t = threads.at(me);
      EXPECT_EQ(t.at("waits_for_tid"), tid_of(other)) << t;
      EXPECT_EQ(t.at("wait_object").at("owner"), me[0] == 'R' ? "recorded" : "inferred") << t;
      EXPECT_EQ(t.at("deadlock"), Json::array({tid_of(me), tid_of(other)})) << t;
    }
  }
  // MainThread took `shared` by acquire(), which leaves no trace: its two
  // waiters are grouped on it, with no holder named.
  for (const char* name : {"Waiter-1", "Waiter-2"}) {
    const Json& t = threads.at(name);
    EXPECT_EQ(t.at("wait_object").at("address"), truth.at("objects").at("shared")) << t;
    EXPECT_EQ(t.at("waits_for_tid"), nullptr) << t;
    EXPECT_EQ(t.at("deadlock"), nullptr) << t;
  }
  RunResult table = run_pyebpf({"dump", "-p", std::to_string(workload.pid())});
  EXPECT_NE(table.out.find("2 threads wait on " + truth.at("objects").at("shared").get<std::string>()),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("Deadlock"), std::string::npos) << table.out;
}

// A thread spinning in pure Python holds the GIL; threads that wake from
// short sleeps wait for it, on it. Either can be caught between the two, so
// up to five dumps are taken until one shows both.
TEST_P(DumpE2E, GilHolderAndItsWaitersAreNamed) {
  Workload workload(GetParam(), "hung.py", {"gil"});
  const Json& truth = workload.ready();
  const long spinner_tid = truth.at("threads").at("Spinner").at("tid");
  const std::string file = truth.at("file");
  const std::string wait_line = "(" + file + ":" + truth.at("lines").at("gil_wait").dump() + ")";
  Json seen_holder, seen_waiter;
  for (int attempt = 0; attempt < 5 && (seen_holder.is_null() || seen_waiter.is_null()); ++attempt) {
    auto threads = dump_threads(workload.pid());
    ASSERT_TRUE(threads.count("Spinner"));
    if (threads.at("Spinner").at("gil") == "holds") seen_holder = threads.at("Spinner");
    for (const char* name : {"GilWaiter-1", "GilWaiter-2"}) {
      const Json& t = threads.at(name);
      if (t.at("gil") == "waits" && t.at("waits_for_tid") == threads.at("Spinner").at("tid")) seen_waiter = t;
    }
  }
  ASSERT_FALSE(seen_holder.is_null()) << "Spinner never seen holding the GIL";
  EXPECT_EQ(seen_holder.at("container_tid").get<long>(), spinner_tid);
  EXPECT_NE(leaf(seen_holder).find("spinner ("), std::string::npos) << seen_holder;
  ASSERT_FALSE(seen_waiter.is_null()) << "no GilWaiter seen waiting for the GIL Spinner holds";
  EXPECT_EQ(seen_waiter.at("wait_kind"), "gil");
  EXPECT_EQ(seen_waiter.at("syscall"), "futex");
  EXPECT_NE(leaf(seen_waiter).find(wait_line), std::string::npos) << seen_waiter;
}

// A thread inside a collection (gc.collect() of a large heap in a loop: it
// is nearly always collecting) is marked in_gc; up to five dumps.
TEST_P(DumpE2E, ThreadInAGarbageCollectionIsMarked) {
  Workload workload(GetParam(), "hung.py", {"gc"});
  const Json& truth = workload.ready();
  const std::string collect_line =
      "(" + truth.at("file").get<std::string>() + ":" + truth.at("lines").at("collect").dump() + ")";
  Json collecting;
  for (int attempt = 0; attempt < 5 && collecting.is_null(); ++attempt) {
    auto threads = dump_threads(workload.pid());
    ASSERT_TRUE(threads.count("Collector"));
    if (threads.at("Collector").at("in_gc") == true) collecting = threads.at("Collector");
    for (const auto& [name, t] : threads) {
      if (name == "Collector") continue;
      EXPECT_EQ(t.at("in_gc"), false) << t;
    }
  }
  ASSERT_FALSE(collecting.is_null()) << "Collector never seen collecting";
  EXPECT_EQ(collecting.at("gil"), "holds");
  EXPECT_NE(leaf(collecting).find(collect_line), std::string::npos) << collecting;
}

// A service of many threads: its oldest threads are the farthest down the
// interpreter's thread list, and each still gets its Python stack.
TEST_P(DumpE2E, EveryThreadOfAManyThreadServiceHasItsStack) {
  Workload workload(GetParam(), "hung.py", {"many"});
  const Json& truth = workload.ready();
  const std::string sleep_frame = frame_at(truth, "sleeper", "sleep");
  auto threads = dump_threads(workload.pid());
  ASSERT_EQ(threads.size(), 301u);
  for (const auto& [name, facts] : truth.at("threads").items()) {
    if (name == "MainThread") continue;
    SCOPED_TRACE(name);
    const Json& t = threads.at(name);
    EXPECT_EQ(t.at("container_tid"), facts.at("tid"));
    EXPECT_EQ(leaf(t), sleep_frame) << t;
    EXPECT_EQ(t.at("wait_kind"), "sleep") << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Pythons, DumpE2E, ::testing::ValuesIn(test_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

// Bad input: one line naming the cause, a non-zero exit.
TEST(DumpCli, MissingOrNonPythonTargetsAreRefusedClearly) {
  RunResult gone = run_pyebpf({"dump", "-p", "999999"});
  EXPECT_EQ(gone.status, 1);
  EXPECT_NE(gone.err.find("pid 999999 does not exist"), std::string::npos) << gone.err;
  Child shell({"/bin/sleep", "30"});
  RunResult not_python = run_pyebpf({"dump", "-p", std::to_string(shell.pid())});
  EXPECT_EQ(not_python.status, 1);
  EXPECT_NE(not_python.err.find("is not a CPython process"), std::string::npos) << not_python.err;
  RunResult no_target = run_pyebpf({"dump"});
  EXPECT_EQ(no_target.status, 2);
  EXPECT_NE(no_target.err.find("--pid or --name"), std::string::npos) << no_target.err;
}

}  // namespace
}  // namespace pyebpf::e2e
