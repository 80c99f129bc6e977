// SPDX-License-Identifier: Apache-2.0
// gc end to end: real interpreters make cyclic garbage and record every
// collection with gc.callbacks; pyebpf must report the same collections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

// Where the hooked span lies relative to the gc.callbacks window the
// workload measures. Both use CLOCK_MONOTONIC (time.perf_counter and
// bpf_ktime_get_ns), so the containment is exact:
//  - USDT gc__start/gc__done, and the collector on 3.8-3.12, run inside the
//    "start" and "stop" callbacks: pyebpf's pause <= the workload's window;
//  - 3.13's gc_collect_main calls the callbacks itself: pyebpf's pause >=
//    the window, and longer by whatever the callbacks wait for (the GIL, when
//    another thread wants it: Python code in a callback can drop it).
bool callbacks_inside(const PythonBuild& build) {
  return !build.distro && build.minor >= 13;
}

// Collections during which the thread never left its CPU, judged from its
// context-switch counts (see gc_pauses.py): then only a few instructions
// separate the callbacks from the probes and the durations must agree. A
// thread switched out may have been switched out just outside pyebpf's span
// (or inside it but outside the callbacks, on 3.13), so only containment
// holds for it. With the callbacks inside, the span ends after the "stop"
// callback has returned, so quiet also needs no switch until the thread's
// next collection starts; its last collection is never quiet then.
//
// Quiet is judged from inside the guest: a vCPU the hypervisor deschedules,
// or interrupts handled on the thread's CPU, leave no trace in the thread's
// counters. Such a gap of a millisecond or more falling between a callback and
// a probe was seen about once in 150 runs here, and twice in one run on a busy
// CI host; up to 1 in 20 quiet collections (at least 2) may be off. A broken
// duration (zero, a wrong clock, a missed return) is off for every one.
std::size_t allowed_outliers(std::size_t judged) {
  return std::max<std::size_t>(2, judged / 20);
}

std::vector<bool> quiet_collections(const Json& records, bool callbacks_inside) {
  std::vector<bool> quiet(records.size(), false);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& sw = records[i].at("sw");
    if (!(sw[0] == sw[1] && sw[1] == sw[2])) continue;
    if (!callbacks_inside) {
      quiet[i] = true;
      continue;
    }
    for (std::size_t j = i + 1; j < records.size(); ++j) {
      if (records[j].at("tid") != records[i].at("tid")) continue;
      quiet[i] = records[j].at("sw")[1] == sw[3];
      break;
    }
  }
  return quiet;
}

// pyebpf's gc_pause events for `pid`, in start order.
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

// One traced run of gc_pauses.py: the workload's RESULT and pyebpf's output.
struct Traced {
  pid_t pid = 0;
  Json truth;
  std::vector<Json> events;  // gc_pause events of the workload, in start order
  std::vector<Json> stats;   // gc_stats records of the workload
  std::string err;           // pyebpf's stderr
};

// Every collection, so every recorded collection has its gc_pause event.
const std::vector<std::string> kEveryCollection{"--gc-min-ms", "0"};

class GcE2E : public ::testing::TestWithParam<PythonBuild> {
 protected:
  // Starts pyebpf with `flags` on gc_pauses.py `workload_args`, lets the
  // workload run once pyebpf traces, and stops pyebpf after its RESULT.
  Traced trace(const std::vector<std::string>& workload_args, const std::vector<std::string>& flags = {}) {
    Workload workload(GetParam(), "gc_pauses.py", workload_args);
    Pyebpf pyebpf(args(workload.pid(), flags));
    pyebpf.wait_ready();
    workload.go();
    Traced out;
    out.pid = workload.pid();
    out.truth = workload.result();
    pyebpf.stop();
    out.err = pyebpf.stderr_text();
    EXPECT_EQ(pyebpf.exit_status(), 0) << out.err;
    out.events = pauses_of(pyebpf, workload.pid());
    for (const auto& e : pyebpf.events("gc_stats")) {
      if (e.at("pid").get<pid_t>() == workload.pid()) out.stats.push_back(e);
    }
    return out;
  }
  // Probes on every collection (--gc-pauses on): the tests of this fixture
  // check each one; GcDefaultE2E checks the default, hook-free mode.
  std::vector<std::string> args(pid_t pid, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"-p", std::to_string(pid), "-e", "e2e", "--enable", "gc", "--gc-pauses", "on"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

TEST_P(GcE2E, SeesEveryCollectionWithGenerationCountsAndDuration) {
  // The workload goes on until it made enough quiet collections (as
  // quiet_collections() judges them) for the durations to be judged: on a
  // busy machine one CI run had only 16.
  ScopedEnv min_quiet("GC_MIN_QUIET", "24");
  ScopedEnv quiet_next("GC_QUIET_NEXT", callbacks_inside(GetParam()) ? "1" : "0");
  Traced run = trace({"1.5"}, kEveryCollection);
  const auto& records = run.truth.at("collections");
  const auto& events = run.events;
  ASSERT_GT(records.size(), 50u) << "the workload should trigger many collections";
  ASSERT_EQ(events.size(), records.size()) << run.err;

  const bool inside = callbacks_inside(GetParam());
  const auto quiet = quiet_collections(records, inside);
  std::set<int> generations;
  std::set<std::string> threads;
  std::size_t judged = 0;
  std::vector<std::string> outliers;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    const Json& e = events[i];
    SCOPED_TRACE("collection " + std::to_string(i) + ": " + describe(r) + "; pyebpf: " + e.dump());
    ASSERT_EQ(e.at("generation"), r.at("generation"));
    ASSERT_EQ(e.at("collected"), r.at("collected"));
    EXPECT_EQ(e.at("uncollectable"), r.at("uncollectable"));
    EXPECT_EQ(e.at("container_tid"), r.at("tid"));
    EXPECT_EQ(e.at("thread_name"), r.at("thread"));
    EXPECT_EQ(e.at("container_pid"), ns_pid(run.pid));
    EXPECT_EQ(e.at("ts"), e.at("start_time"));
    EXPECT_LE(e.at("start_time").get<std::string>(), e.at("end_time").get<std::string>());
    generations.insert(r.at("generation").get<int>());
    threads.insert(r.at("thread").get<std::string>());

    // Containment, whatever the scheduler did (5 us for float rounding).
    const double wall = r.at("wall_ms").get<double>(), pause = e.at("duration_ms").get<double>();
    if (inside) {
      EXPECT_GE(pause, wall - 0.005);
    } else {
      EXPECT_LE(pause, wall + 0.005);
    }
    if (!quiet[i]) continue;
    ++judged;
    if (std::abs(pause - wall) > std::max(0.5, 0.2 * wall) ||
        std::abs(e.at("ts_us").get<double>() - r.at("epoch_us").get<double>()) > 1000)
      outliers.push_back("collection " + std::to_string(i) + ": " + describe(r) + "; pyebpf: " + e.dump());
  }
  EXPECT_LE(outliers.size(), allowed_outliers(judged)) << testing::PrintToString(outliers);
  EXPECT_EQ(threads, (std::set<std::string>{"MainThread", "Churner-1"}));
  EXPECT_EQ(generations, (std::set<int>{0, 1, 2}));
  EXPECT_GE(judged, 20u) << "too few collections ran without a context switch to judge durations";

  const std::string& err = run.err;
  const std::string hook =
      GetParam().distro ? "USDT python:gc__start"
                        : "uprobe + uretprobe on " + std::string(GetParam().minor <= 9 ? "collect" : "gc_collect_main");
  EXPECT_NE(err.find("gc: pid " + std::to_string(run.pid) + " (CPython "), std::string::npos) << err;
  EXPECT_NE(err.find(hook), std::string::npos) << err;
  EXPECT_EQ(summary_count(err, "gc", "lost"), 0) << err;
}

TEST_P(GcE2E, StackIsTheOneTheCollectionRanIn) {
  Traced run = trace({"1"}, kEveryCollection);
  const auto& records = run.truth.at("collections");
  const auto& events = run.events;
  ASSERT_EQ(events.size(), records.size()) << run.err;
  const std::string file = run.truth.at("file");

  // Every stack equals the one the gc callback saw below itself: the frames
  // of the code whose allocation triggered the collection (3.8-3.11: the
  // allocating line itself; 3.12+ run the collection at the next eval-breaker
  // check, usually a backward jump of the same loop).
  std::size_t automatic = 0, at_allocation = 0;
  std::vector<std::string> explicit_stacks;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string stack = events[i].at("py_stack");
    ASSERT_EQ(stack, records[i].at("stack").get<std::string>()) << "collection " << i << ": " << describe(records[i]);
    EXPECT_EQ(events[i].at("py_stack_depth").get<int>(),
              static_cast<int>(std::count(stack.begin(), stack.end(), ';')) + 1);
    if (records[i].at("phase") == "explicit") {
      explicit_stacks.push_back(stack);
      continue;
    }
    ++automatic;
    at_allocation += GetParam().minor <= 11 ? stack.ends_with(frame_at(run.truth, "make_cycles", "alloc_a")) ||
                                                  stack.ends_with(frame_at(run.truth, "make_cycles", "alloc_b"))
                                            : stack.find("make_cycles (" + file + ":") != std::string::npos;
  }
  // gc.collect(0), (1), (2): the leaf frame is the line that called it.
  ASSERT_EQ(explicit_stacks.size(), 3u);
  const char* markers[] = {"collect0", "collect1", "collect2"};
  for (int g = 0; g < 3; ++g) {
    EXPECT_TRUE(explicit_stacks[g].ends_with(frame_at(run.truth, "explicit_collections", markers[g])))
        << explicit_stacks[g];
    EXPECT_EQ(explicit_stacks[g].rfind("<module> (" + file + ":", 0), 0u) << "root frame first: " << explicit_stacks[g];
  }
  // The churn is nearly all the workload's allocations: the allocating
  // function shows up in (almost) every automatic collection.
  ASSERT_GT(automatic, 20u);
  EXPECT_GE(at_allocation, automatic * 95 / 100);
}

TEST_P(GcE2E, MinMsDropsShorterCollectionsInBpf) {
  constexpr double kMinMs = 2.0;
  // One thread; 300k live objects and four more gc.collect(2): full
  // collections use well over kMinMs of CPU, young ones far less.
  Traced run = trace({"1", "300000", "1", "4"}, {"--gc-min-ms", "2"});
  const auto& records = run.truth.at("collections");
  const auto& events = run.events;
  ASSERT_GT(records.size(), events.size());
  // Each reported pause is the recorded collection whose callbacks window
  // contains its span (or lies inside it, on 3.13); collections never overlap.
  // 0.2 ms of slack for the realtime/monotonic conversion.
  const bool inside = callbacks_inside(GetParam());
  std::vector<bool> reported(records.size(), false);
  for (const auto& e : events) {
    EXPECT_GE(e.at("duration_ms").get<double>(), kMinMs) << e.dump();
    const double start = e.at("ts_us").get<double>(), end = start + e.at("duration_ms").get<double>() * 1000;
    std::size_t match = records.size();
    for (std::size_t i = 0; i < records.size() && match == records.size(); ++i) {
      const double r_start = records[i].at("epoch_us").get<double>();
      const double r_end = r_start + records[i].at("wall_ms").get<double>() * 1000;
      const bool contains =
          inside ? (start <= r_start + 200 && r_end <= end + 200) : (r_start <= start + 200 && end <= r_end + 200);
      if (contains && records[i].at("generation") == e.at("generation")) match = i;
    }
    ASSERT_LT(match, records.size()) << "reported pause matches no recorded collection: " << e.dump();
    EXPECT_EQ(records[match].at("collected"), e.at("collected"));
    EXPECT_FALSE(reported[match]) << "two pauses for one collection: " << describe(records[match]);
    reported[match] = true;
  }
  // Which collections had to be reported and which not, from the workload's
  // measures alone: a collection that used well more CPU than the threshold
  // lasted longer than it; one whose callbacks window is shorter was
  // shorter, where the span lies inside the window; otherwise only a quiet
  // one can tell.
  const auto quiet = quiet_collections(records, inside);
  std::size_t must = 0, must_not = 0;
  std::vector<std::string> outliers;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    const double wall = r.at("wall_ms").get<double>();
    const bool long_by_cpu = r.at("cpu_ms").get<double>() >= kMinMs + 0.5;
    const bool short_by_containment = !inside && wall < kMinMs - 0.005;
    if (long_by_cpu || (quiet[i] && wall >= kMinMs + 0.5)) {
      ++must;
      // CPU time is a strong hint, not proof: in one run here a collection
      // used 0.75 ms more CPU inside its callbacks window than in the
      // collector itself. Judged with the other outliers.
      if (!reported[i]) outliers.push_back("not reported: " + describe(r));
    } else if (short_by_containment || (quiet[i] && wall < kMinMs - 0.5)) {
      ++must_not;
      EXPECT_FALSE(reported[i] && short_by_containment) << "reported although short: " << describe(r);
      if (reported[i] && !short_by_containment) outliers.push_back("reported although short: " + describe(r));
    }
  }
  EXPECT_LE(outliers.size(), allowed_outliers(must + must_not)) << testing::PrintToString(outliers);
  EXPECT_GE(must, 4u) << "too few collections long enough to test the threshold";
  EXPECT_GE(must_not, 20u) << "too few collections short enough to test the threshold";
  EXPECT_EQ(summary_count(run.err, "gc", "below --gc-min-ms"), static_cast<long>(records.size() - events.size()))
      << run.err;
}

// At the default threshold only long collections are events, but every one is
// counted: the gc_stats records (several intervals) and the report's GC
// section hold exactly the collections, collected and uncollectable counts
// the workload's gc.callbacks saw, per generation.
struct GcSums {
  std::uint64_t count = 0;
  std::int64_t collected = 0, uncollectable = 0;
  double total_ms = 0, max_ms = 0;
};

// gc_stats records, over several intervals, count exactly the collections
// the workload's gc.callbacks saw, per generation. Returns their sums.
std::map<int, GcSums> expect_stats_count_every_collection(const Traced& run) {
  const auto& records = run.truth.at("collections");
  EXPECT_GT(records.size(), 50u);
  std::map<int, GcSums> truth, seen;
  for (const auto& r : records) {
    GcSums& t = truth[r.at("generation").get<int>()];
    ++t.count;
    t.collected += r.at("collected").get<std::int64_t>();
    t.uncollectable += r.at("uncollectable").get<std::int64_t>();
  }
  std::set<std::string> intervals;
  for (const auto& e : run.stats) {
    SCOPED_TRACE(e.dump());
    EXPECT_TRUE(e.contains("generation")) << "every collection's generation is known";
    if (!e.contains("generation")) continue;
    GcSums& s = seen[e.at("generation").get<int>()];
    const auto count = e.at("count").get<std::uint64_t>();
    EXPECT_GT(count, 0u) << "intervals without collections are not emitted";
    s.count += count;
    s.collected += e.at("collected").get<std::int64_t>();
    s.uncollectable += e.at("uncollectable").get<std::int64_t>();
    s.total_ms += e.at("total_ms").get<double>();
    s.max_ms = std::max(s.max_ms, e.at("max_ms").get<double>());
    EXPECT_LE(e.at("p50_ms").get<double>(), e.at("p99_ms").get<double>());
    EXPECT_LE(e.at("p99_ms").get<double>(), e.at("max_ms").get<double>());
    EXPECT_LE(e.at("max_ms").get<double>(), e.at("total_ms").get<double>() + 0.001);
    std::uint64_t in_histogram = 0;
    for (const auto& bucket : e.at("histogram")) in_histogram += bucket.at(2).get<std::uint64_t>();
    EXPECT_EQ(in_histogram, count);
    EXPECT_EQ(e.at("container_pid"), ns_pid(run.pid));
    intervals.insert(e.at("ts").get<std::string>());
  }
  for (const auto& [gen, t] : truth) {
    EXPECT_EQ(seen[gen].count, t.count) << "generation " << gen;
    EXPECT_EQ(seen[gen].collected, t.collected) << "generation " << gen;
    EXPECT_EQ(seen[gen].uncollectable, t.uncollectable) << "generation " << gen;
  }
  EXPECT_EQ(seen.size(), truth.size());
  EXPECT_GE(intervals.size(), 2u) << "--gc-stats-interval 1 over 2.5 s makes several intervals";
  return seen;
}

TEST_P(GcE2E, StatsCountEveryCollectionAtTheDefaultThreshold) {
  Traced run = trace({"2.5"}, {"--gc-stats-interval", "1"});
  const auto seen = expect_stats_count_every_collection(run);
  const auto& records = run.truth.at("collections");

  // Collections that are events are at or above the 1 ms default; each one's
  // duration is inside its generation's totals.
  double event_ms = 0;
  for (const auto& e : run.events) {
    EXPECT_GE(e.at("duration_ms").get<double>(), 1.0) << e.dump();
    EXPECT_LE(e.at("duration_ms").get<double>(), seen.at(e.at("generation").get<int>()).max_ms + 0.001) << e.dump();
    event_ms += e.at("duration_ms").get<double>();
  }
  double stats_ms = 0;
  for (const auto& [gen, s] : seen) stats_ms += s.total_ms;
  EXPECT_LE(event_ms, stats_ms + 0.01);
  EXPECT_EQ(summary_count(run.err, "gc", "below --gc-min-ms"), static_cast<long>(records.size() - run.events.size()))
      << run.err;

  // The summary line and the report count every collection too.
  EXPECT_EQ(summary_count(run.err, "gc", "collections in"), static_cast<long>(records.size())) << run.err;
  EXPECT_NE(run.err.find("[gc_stats: " + std::to_string(records.size()) + " collections,"), std::string::npos)
      << run.err;
  for (const auto& [gen, t] : seen) {  // equal to the workload's counts
    std::smatch m;
    const std::regex row("\\n +" + std::to_string(gen) + " +(\\d+) ");
    ASSERT_TRUE(std::regex_search(run.err, m, row)) << "generation " << gen << ": " << run.err;
    EXPECT_EQ(std::stoull(m[1].str()), t.count) << "generation " << gen << ": " << run.err;
  }
}

// The same exact counts through perf-event uprobes, the links kernels before
// 6.6 get (on this kernel, gc's uprobe builds use uprobe_multi links; its
// USDT builds use perf-event uprobes either way).
TEST_P(GcE2E, StatsCountEveryCollectionThroughPerfEventUprobes) {
  ScopedEnv links("PYEBPF_UPROBE_LINKS", "perf-event");
  Traced run = trace({"2.5"}, {"--gc-stats-interval", "1"});
  expect_stats_count_every_collection(run);
  EXPECT_NE(run.err.find("per-process uprobes attach one perf event per site"), std::string::npos) << run.err;
}

TEST_P(GcE2E, PyStackCanBeTurnedOff) {
  Traced run = trace({"0.5"}, {"--gc-py-enable", "false", "--gc-min-ms", "0"});
  ASSERT_EQ(run.events.size(), run.truth.at("collections").size());
  for (const auto& e : run.events) {
    EXPECT_FALSE(e.contains("py_stack")) << e.dump();
    EXPECT_FALSE(e.contains("py_stack_depth")) << e.dump();
    EXPECT_TRUE(e.contains("generation")) << e.dump();
  }
}

TEST_P(GcE2E, ForcingAHookTheBuildLacksFailsWithTheReason) {
  Workload workload(GetParam(), "gc_pauses.py", {"0"});
  const bool debian = GetParam().distro;
  auto r = run_pyebpf(args(workload.pid(), {"--gc-hook", debian ? "uprobe" : "usdt", "--duration", "5"}));
  EXPECT_NE(r.status, 0) << r.err;
  const std::string reason = debian ? "no symbol gc_collect_main (.symtab stripped)"
                                    : "no python:gc__start/gc__done USDT probes (built without --with-dtrace)";
  EXPECT_NE(r.err.find("pyebpf: error: gc: pid " + std::to_string(workload.pid())), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gc-hook auto"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(GcFlags, BadValuesFailBeforeAnythingAttaches) {
  for (const auto& [flags, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--gc-py-enable", "maybe"}, "--gc-py-enable"},
           {{"--gc-min-ms", "-1"}, "--gc-min-ms must be >= 0 ms, e.g. --gc-min-ms 5 (got '-1')"},
           {{"--gc-min-ms", "2ms"}, "--gc-min-ms must be >= 0 ms, e.g. --gc-min-ms 5 (got '2ms')"},
           {{"--gc-hook", "kprobe"}, "--gc-hook: kprobe not in {auto,usdt,uprobe}"}}) {
    std::vector<std::string> a{"-p", "1", "-e", "e2e", "--enable", "gc"};
    a.insert(a.end(), flags.begin(), flags.end());
    auto r = run_pyebpf(a);
    EXPECT_EQ(r.status, 2) << flags[0] << " " << flags[1] << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  // Accepted spellings get past the flags (and fail on the target instead).
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--gc-py-enable", "false"}, {"--gc-py-enable=off"}, {"--no-gc-py-enable"}, {"--gc-min-ms", "0.25"}}) {
    std::vector<std::string> a{"-p", "999999999", "-e", "e2e", "--enable", "gc"};
    a.insert(a.end(), flags.begin(), flags.end());
    auto r = run_pyebpf(a);
    EXPECT_NE(r.err.find("pid 999999999 does not exist"), std::string::npos) << flags[0] << ": " << r.err;
  }
}

// The default mode: counts from the interpreter's own counters, GC's share
// of CPU from samples, probes only on a target that collects rarely.
class GcDefaultE2E : public ::testing::TestWithParam<PythonBuild> {
 protected:
  struct Run {
    Json truth;
    std::vector<Json> stats, cpu, pauses;
    std::string err;
  };
  Run run(const std::vector<std::string>& workload_args, const std::vector<std::string>& flags) {
    Workload workload(GetParam(), "gc_share.py", workload_args);
    std::vector<std::string> a{"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "gc", "-v"};
    a.insert(a.end(), flags.begin(), flags.end());
    Pyebpf pyebpf(a);
    pyebpf.wait_ready();
    workload.go();
    Run out;
    out.truth = workload.result();
    pyebpf.stop();
    out.err = pyebpf.stderr_text();
    EXPECT_EQ(pyebpf.exit_status(), 0) << out.err;
    out.stats = pyebpf.events("gc_stats");
    out.cpu = pyebpf.events("gc_cpu");
    out.pauses = pyebpf.events("gc_pause");
    return out;
  }

  // gc_stats count, per generation, exactly what gc.get_stats() moved by.
  static std::uint64_t expect_counts_equal_the_interpreters(const Run& r) {
    std::map<int, GcSums> seen;
    std::uint64_t timed = 0;
    for (const auto& e : r.stats) {
      SCOPED_TRACE(e.dump());
      EXPECT_TRUE(e.contains("generation"));
      if (!e.contains("generation")) continue;
      GcSums& s = seen[e.at("generation").get<int>()];
      s.count += e.at("count").get<std::uint64_t>();
      s.collected += e.at("collected").get<std::int64_t>();
      s.uncollectable += e.at("uncollectable").get<std::int64_t>();
      timed += e.at("timed").get<std::uint64_t>();
      EXPECT_LE(e.at("timed").get<std::uint64_t>(), e.at("count").get<std::uint64_t>());
    }
    std::uint64_t total = 0;
    for (int g = 0; g < 3; ++g) {
      const Json& t = r.truth.at("stats").at(g);
      EXPECT_EQ(seen[g].count, t.at("collections").get<std::uint64_t>()) << "generation " << g;
      EXPECT_EQ(seen[g].collected, t.at("collected").get<std::int64_t>()) << "generation " << g;
      EXPECT_EQ(seen[g].uncollectable, t.at("uncollectable").get<std::int64_t>()) << "generation " << g;
      total += t.at("collections").get<std::uint64_t>();
    }
    EXPECT_EQ(total, r.truth.at("collections").get<std::uint64_t>()) << "every collection ran the callbacks";
    return timed;
  }
};

// Thousands of collections a second: no probe is ever attached, the counts
// are still exact, and the share of CPU the samples find collecting is the
// share the workload's callbacks measure (999 Hz: ~3,000 samples, a standard
// error under a point).
TEST_P(GcDefaultE2E, CountsEveryCollectionAndSamplesItsShareOfCpuWithoutProbes) {
  Run r = run({"3", "0", "2000"}, {"--gc-sample-hz", "999", "--gc-stats-interval", "1"});
  const double seconds = 3.0;
  ASSERT_GT(r.truth.at("collections").get<double>() / seconds, 1000.0) << "the workload should collect often";
  EXPECT_EQ(expect_counts_equal_the_interpreters(r), 0u) << "no collection timed one by one";
  EXPECT_TRUE(r.pauses.empty());
  EXPECT_NE(r.err.find("not timed now (attached 0 times, detached 0 times)"), std::string::npos) << r.err;

  std::uint64_t samples = 0, gc_samples = 0;
  for (const auto& e : r.cpu) {
    samples += e.at("samples").get<std::uint64_t>();
    gc_samples += e.at("gc_samples").get<std::uint64_t>();
  }
  const double cpu_s = r.truth.at("cpu_s").get<double>();
  ASSERT_GT(static_cast<double>(samples), cpu_s * 999 * 0.8) << "the sampler sees the target's CPU";
  const double share = 100.0 * static_cast<double>(gc_samples) / static_cast<double>(samples);
  // The callbacks' own cost inside each collection is collecting time to a
  // sampler (a third of a point here): the workload measured it for us.
  const double gc_cpu_s = r.truth.at("gc_cpu_s").get<double>() + r.truth.at("callback_cpu_s").get<double>();
  const double truth = 100.0 * gc_cpu_s / cpu_s;
  EXPECT_GT(truth, 10.0) << "the workload should spend a visible share collecting";
  // Samples find a collection more often than the clocks do, on every
  // version: 0.6-3.4 points over 33 runs here, with or without other load,
  // but 8.1 once in CI with other tests running beside it (cause not found:
  // not the callbacks, whose cost is added above). 6 points for that, plus 4
  // standard errors of the sampled share (0.8 points at ~3,000 samples). A
  // sampler that counted every sample or none as collecting is still far off.
  const double p = share / 100.0;
  const double tolerance = 6.0 + 4.0 * 100.0 * std::sqrt(p * (1.0 - p) / static_cast<double>(samples));
  EXPECT_NEAR(share, truth, tolerance) << gc_samples << " of " << samples << " samples; callbacks "
                                       << r.truth.at("callback_cpu_s").get<double>() << " s";

  // 3.15+ time their collections themselves: the totals are theirs.
  double total_ms = 0;
  for (const auto& e : r.stats) {
    EXPECT_EQ(e.contains("total_ms"), GetParam().minor >= 15) << e.dump();
    if (e.contains("total_ms")) total_ms += e.at("total_ms").get<double>();
    EXPECT_FALSE(e.contains("p50_ms")) << e.dump();
  }
  if (GetParam().minor >= 15) {
    const double window_ms = r.truth.at("gc_wall_s").get<double>() * 1e3;
    EXPECT_LE(total_ms, window_ms + 1.0);
    EXPECT_GE(total_ms, 0.5 * window_ms);
  }
}

// A target that collects rarely gets the probes after the first check: its
// collections are timed one by one from then on, the counts stay exact.
TEST_P(GcDefaultE2E, RareCollectionsAreTimedOneByOne) {
  Run r = run({"3", "20", "2000"}, {"--gc-stats-interval", "1", "--gc-min-ms", "0"});
  const std::uint64_t timed = expect_counts_equal_the_interpreters(r);
  EXPECT_GT(timed, r.truth.at("collections").get<std::uint64_t>() / 2) << "timed after the first check (1 s of 3)";
  EXPECT_EQ(r.pauses.size(), timed) << "--gc-min-ms 0: an event per timed collection";
  EXPECT_NE(r.err.find("timed now (attached 1 times, detached 0 times)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pauses timed one by one: "), std::string::npos) << r.err;
  for (const auto& e : r.stats) {
    if (e.at("timed").get<std::uint64_t>() == 0) continue;
    EXPECT_LE(e.at("p50_ms").get<double>(), e.at("p99_ms").get<double>()) << e.dump();
    EXPECT_LE(e.at("p99_ms").get<double>(), e.at("max_ms").get<double>()) << e.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Pythons, GcDefaultE2E, ::testing::ValuesIn(test_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

INSTANTIATE_TEST_SUITE_P(Pythons, GcE2E, ::testing::ValuesIn(test_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
