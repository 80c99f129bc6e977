// SPDX-License-Identifier: Apache-2.0
// gc end to end: real interpreters make cyclic garbage and record every
// collection with gc.callbacks; pyebpf must report the same collections.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

bool is_debian(const PythonBuild& build) { return build.label.rfind("debian", 0) == 0; }

// A collection the workload saw is "undisturbed" when its thread was on a CPU
// for the whole window (wall time == thread CPU time): then the only
// difference from pyebpf's measure is the few instructions between the
// callbacks and the probes. A thread preempted inside the window can have
// been preempted just outside pyebpf's (or the reverse on 3.13, where the
// callbacks run inside gc_collect_main), so its duration proves nothing.
bool undisturbed(const Json& record) {
  return record.at("wall_ms").get<double>() - record.at("cpu_ms").get<double>() <= 0.1;
}

std::vector<Json> pauses_of(const Pyebpf& pyebpf, pid_t pid) {
  std::vector<Json> out;
  for (const auto& e : pyebpf.events("gc_pause")) {
    if (e.at("pid").get<pid_t>() == pid) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const Json& a, const Json& b) { return a.at("ts_us") < b.at("ts_us"); });
  return out;
}

std::string describe(const Json& record) {
  return "gen " + record.at("generation").dump() + " collected " + record.at("collected").dump() + " on " +
         record.at("thread").get<std::string>() + ", " + record.at("wall_ms").dump() + " ms";
}

// The number in "<n> <label>" of pyebpf's end-of-run gc summary line.
long summary_count(const std::string& stderr_text, const std::string& label) {
  std::smatch m;
  std::regex re("pyebpf: gc: .*?(\\d+) " + label);
  if (!std::regex_search(stderr_text, m, re)) return -1;
  return std::stol(m[1].str());
}

class GcE2E : public ::testing::TestWithParam<PythonBuild> {
 protected:
  Json profile(Workload& workload, Pyebpf& pyebpf) {
    pyebpf.wait_ready();
    workload.go();
    Json result = workload.result();
    pyebpf.stop();
    EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
    return result;
  }
  std::vector<std::string> args(pid_t pid, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"-p", std::to_string(pid), "-e", "e2e", "--enable", "gc"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

TEST_P(GcE2E, SeesEveryCollectionWithGenerationCountsAndDuration) {
  Workload workload(GetParam(), "gc_pauses.py", {"1.5"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const auto& records = truth.at("collections");
  auto events = pauses_of(pyebpf, workload.pid());
  ASSERT_GT(records.size(), 50u) << "the workload should trigger many collections";
  ASSERT_EQ(events.size(), records.size()) << pyebpf.stderr_text();

  std::set<int> generations;
  std::size_t judged = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    const Json& e = events[i];
    SCOPED_TRACE("collection " + std::to_string(i) + ": " + describe(r) + "; pyebpf: " + e.dump());
    ASSERT_EQ(e.at("generation"), r.at("generation"));
    ASSERT_EQ(e.at("collected"), r.at("collected"));
    EXPECT_EQ(e.at("uncollectable"), r.at("uncollectable"));
    EXPECT_EQ(e.at("tid"), r.at("tid"));
    EXPECT_EQ(e.at("thread_name"), r.at("thread"));
    EXPECT_EQ(e.at("container_pid"), workload.pid());
    EXPECT_EQ(e.at("ts"), e.at("start_time"));
    EXPECT_LE(e.at("start_time").get<std::string>(), e.at("end_time").get<std::string>());
    generations.insert(r.at("generation").get<int>());
    if (!undisturbed(r)) continue;
    ++judged;
    double wall = r.at("wall_ms").get<double>();
    EXPECT_NEAR(e.at("duration_ms").get<double>(), wall, std::max(0.5, 0.2 * wall));
    // Both clocks are the host's: the starts agree to well under a millisecond.
    EXPECT_NEAR(e.at("ts_us").get<double>(), r.at("epoch_us").get<double>(), 1000);
  }
  EXPECT_EQ(generations, (std::set<int>{0, 1, 2}));
  EXPECT_GE(judged, records.size() / 2) << "too few collections ran undisturbed to judge durations";

  const std::string& err = pyebpf.stderr_text();
  const std::string hook = is_debian(GetParam()) ? "USDT python:gc__start"
                                                 : "uprobe + uretprobe on " +
                                                       std::string(GetParam().minor <= 9 ? "collect" : "gc_collect_main");
  EXPECT_NE(err.find("gc: pid " + std::to_string(workload.pid()) + " (CPython "), std::string::npos) << err;
  EXPECT_NE(err.find(hook), std::string::npos) << err;
  EXPECT_EQ(summary_count(err, "lost"), 0) << err;
}

TEST_P(GcE2E, StackShowsTheAllocatingFunctionAndTheExplicitCall) {
  Workload workload(GetParam(), "gc_pauses.py", {"1"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const auto& records = truth.at("collections");
  auto events = pauses_of(pyebpf, workload.pid());
  ASSERT_EQ(events.size(), records.size()) << pyebpf.stderr_text();
  const std::string file = truth.at("file");
  const auto& lines = truth.at("lines");
  auto frame = [&](const char* func, const char* marker) {
    return std::string(func) + " (" + file + ":" + std::to_string(lines.at(marker).get<int>()) + ")";
  };
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };

  std::size_t automatic = 0, in_allocator = 0, at_allocation = 0;
  std::vector<std::string> explicit_stacks;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string stack = events[i].at("py_stack");
    EXPECT_EQ(events[i].at("py_stack_depth").get<int>(), static_cast<int>(std::count(stack.begin(), stack.end(), ';')) + 1)
        << stack;
    if (records[i].at("explicit").get<bool>()) {
      explicit_stacks.push_back(stack);
      continue;
    }
    ++automatic;
    in_allocator += stack.find("make_cycles (" + file + ":") != std::string::npos;
    at_allocation += ends_with(stack, frame("make_cycles", "alloc_a")) || ends_with(stack, frame("make_cycles", "alloc_b"));
  }
  // gc.collect(0), (1), (2): the leaf frame is the line that called it.
  ASSERT_EQ(explicit_stacks.size(), 3u);
  const char* markers[] = {"collect0", "collect1", "collect2"};
  for (int g = 0; g < 3; ++g) {
    EXPECT_TRUE(ends_with(explicit_stacks[g], frame("explicit_collections", markers[g]))) << explicit_stacks[g];
    EXPECT_EQ(explicit_stacks[g].rfind("<module> (" + file + ":", 0), 0u) << "root frame first: " << explicit_stacks[g];
  }
  // Automatic collections run inside the allocation that crossed the
  // threshold, all in make_cycles here. Up to 3.11 the leaf frame is the
  // allocating line itself; 3.12+ defer the collection to the next
  // eval-breaker check (a backward jump or call in the same function).
  ASSERT_GT(automatic, 20u);
  EXPECT_EQ(in_allocator, automatic);
  if (GetParam().minor <= 11) {
    EXPECT_EQ(at_allocation, automatic);
  }
}

TEST_P(GcE2E, MinMsDropsShorterCollectionsInBpf) {
  constexpr double kMinMs = 5.0;
  // 300k live objects: full collections take well over kMinMs, young ones far less.
  Workload workload(GetParam(), "gc_pauses.py", {"1", "300000"});
  Pyebpf pyebpf(args(workload.pid(), {"--gc-min-ms", "5"}));
  Json truth = profile(workload, pyebpf);

  const auto& records = truth.at("collections");
  auto events = pauses_of(pyebpf, workload.pid());
  for (const auto& e : events) EXPECT_GE(e.at("duration_ms").get<double>(), kMinMs) << e.dump();
  // Match reported pauses to the workload's records in order.
  std::size_t next = 0, must = 0;
  std::vector<bool> reported(records.size(), false);
  for (const auto& e : events) {
    while (next < records.size() && !(records[next].at("generation") == e.at("generation") &&
                                      records[next].at("collected") == e.at("collected") &&
                                      records[next].at("tid") == e.at("tid")))
      ++next;
    ASSERT_LT(next, records.size()) << "reported pause matches no recorded collection: " << e.dump();
    reported[next++] = true;
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    if (!undisturbed(r)) continue;
    double wall = r.at("wall_ms").get<double>();
    if (wall >= kMinMs + 0.5) {
      ++must;
      EXPECT_TRUE(reported[i]) << "not reported: " << describe(r);
    } else if (wall < kMinMs - 0.5) {
      EXPECT_FALSE(reported[i]) << "reported although short: " << describe(r);
    }
  }
  EXPECT_GE(must, 1u) << "no undisturbed collection was long enough to test the threshold";
  const std::string& err = pyebpf.stderr_text();
  EXPECT_EQ(summary_count(err, "below --gc-min-ms"), static_cast<long>(records.size() - events.size())) << err;
}

TEST_P(GcE2E, PyStackCanBeTurnedOff) {
  Workload workload(GetParam(), "gc_pauses.py", {"0.5"});
  Pyebpf pyebpf(args(workload.pid(), {"--gc-py-enable", "false"}));
  Json truth = profile(workload, pyebpf);

  auto events = pauses_of(pyebpf, workload.pid());
  ASSERT_EQ(events.size(), truth.at("collections").size());
  for (const auto& e : events) {
    EXPECT_FALSE(e.contains("py_stack")) << e.dump();
    EXPECT_FALSE(e.contains("py_stack_depth")) << e.dump();
    EXPECT_TRUE(e.contains("generation")) << e.dump();
  }
}

TEST_P(GcE2E, ForcingAHookTheBuildLacksFailsWithTheReason) {
  Workload workload(GetParam(), "gc_pauses.py", {"0"});
  const bool debian = is_debian(GetParam());
  auto r = run_pyebpf(args(workload.pid(), {"--gc-hook", debian ? "uprobe" : "usdt", "--duration", "5"}));
  EXPECT_NE(r.status, 0) << r.err;
  const std::string reason = debian ? "no symbol gc_collect_main (.symtab stripped)"
                                    : "no python:gc__start/gc__done USDT probes (built without --with-dtrace)";
  EXPECT_NE(r.err.find("pyebpf: error: gc: pid " + std::to_string(workload.pid())), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gc-hook auto"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Pythons, GcE2E, ::testing::ValuesIn(test_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
