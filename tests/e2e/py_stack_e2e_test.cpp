// SPDX-License-Identifier: Apache-2.0
// py_stack end to end: real interpreters, real workloads, real BPF.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

// Seconds the hypervisor took from each of this VM's CPUs, from the cpuN
// lines of /proc/stat. The sampler's CPU clock runs on while a vCPU is
// stolen, but the guest's thread CPU time stops: a burner's samples exceed
// its own cpu_seconds by the steal of the CPUs it ran on.
std::vector<double> stolen_seconds() {
  std::ifstream stat("/proc/stat");
  std::vector<double> out;
  std::string cpu;
  while (stat >> cpu && cpu.rfind("cpu", 0) == 0) {
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
    stat >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    stat.ignore(1024, '\n');
    if (cpu != "cpu") out.push_back(static_cast<double>(steal) / static_cast<double>(sysconf(_SC_CLK_TCK)));
  }
  return out;
}

// The most any one CPU had stolen between two readings.
double most_stolen(const std::vector<double>& before, const std::vector<double>& after) {
  double most = 0;
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) most = std::max(most, after[i] - before[i]);
  return most;
}

class PyStackE2E : public ::testing::TestWithParam<PythonBuild> {
 protected:
  std::vector<std::string> args(pid_t pid, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"-p", std::to_string(pid), "-e", "e2e", "--enable", "py_stack"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

TEST_P(PyStackE2E, FunctionSharesMatchMeasuredCpuTime) {
  Workload workload(GetParam(), "cpu_shares.py", {"4"});
  Pyebpf pyebpf(args(workload.pid(), {"--pystack-frequency", "499"}));
  Json truth = profile(workload, pyebpf);

  auto samples = of_tid(pyebpf.events("py_stack"), truth.at("tid").get<long>());
  std::map<std::string, double> hits;
  double total = 0;
  for (const auto& e : samples) {
    const std::string stack = e.at("stack");
    for (const char* f : {"func_a", "func_b", "func_c"}) {
      if (stack.find(std::string(f) + " (") != std::string::npos) {
        hits[f] += 1;
        total += 1;
      }
    }
  }
  ASSERT_GT(total, 500) << "too few samples to judge proportions";
  for (const auto& [name, share] : truth.at("shares").items()) {
    double measured = hits[name] / total;
    EXPECT_NEAR(measured, share.get<double>(), 0.05) << name << ": pyebpf " << measured << " vs workload " << share;
  }
}

TEST_P(PyStackE2E, StackIsRootFirstWithExecutingLines) {
  Workload workload(GetParam(), "known_lines.py", {"2"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const auto& lines = truth.at("lines");
  const std::string expected_tail = frame_at(truth, "<module>", "call_outer") + ";" +
                                    frame_at(truth, "outer", "call_middle") + ";" +
                                    frame_at(truth, "middle", "call_inner") + ";" + frame_at(truth, "inner", "spin");
  auto samples = of_tid(pyebpf.events("py_stack"), truth.at("tid").get<long>());
  ASSERT_GT(samples.size(), 50u);
  std::size_t matching = 0;
  for (const auto& e : samples) {
    const std::string stack = e.at("stack");
    if (stack == expected_tail) {
      ++matching;
      EXPECT_EQ(e.at("leaf_func"), "inner");
      EXPECT_EQ(e.at("leaf_line"), lines.at("spin").get<int>());
      EXPECT_EQ(e.at("stack_depth"), 4);
      EXPECT_EQ(e.at("truncated"), false);
    }
  }
  // Samples land either in the spin line or, rarely, while a call is being set up.
  EXPECT_GE(matching, samples.size() * 9 / 10) << "example stack: " << samples.front().at("stack");
}

TEST_P(PyStackE2E, PythonCalledFromCHasNoShimFrames) {
  Workload workload(GetParam(), "c_calls.py", {"2"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const std::string file = truth.at("file");
  const std::string pair = "caller (" + file + ":" + std::to_string(truth.at("lines").at("call_sorted").get<int>()) +
                           ");key_func (" + file + ":" + std::to_string(truth.at("lines").at("spin").get<int>()) + ")";
  auto samples = of_tid(pyebpf.events("py_stack"), truth.at("tid").get<long>());
  ASSERT_GT(samples.size(), 50u);
  std::size_t adjacent = 0;
  for (const auto& e : samples) {
    const std::string stack = e.at("stack");
    adjacent += stack.size() >= pair.size() && stack.compare(stack.size() - pair.size(), pair.size(), pair) == 0;
    EXPECT_EQ(stack.find("<shim>"), std::string::npos) << stack;
    EXPECT_EQ(stack.find("<unknown>"), std::string::npos) << stack;
    EXPECT_EQ(stack.find("trampoline"), std::string::npos) << stack;
  }
  EXPECT_GE(adjacent, samples.size() * 9 / 10) << "example: " << samples.front().at("stack");
}

TEST_P(PyStackE2E, ThreadsStartedAfterAttachAreSampledWithTheirNames) {
  Workload workload(GetParam(), "threads.py", {"3"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  auto events = pyebpf.events("py_stack");
  ASSERT_EQ(truth.at("threads").size(), 3u);
  for (const auto& t : truth.at("threads")) {
    auto samples = of_tid(events, t.at("native_id").get<long>());
    ASSERT_GT(samples.size(), 5u) << "no samples for thread " << t.at("name");
    // Once the thread runs its target it is registered in threading._active,
    // so every sample from then on must carry its Python name.
    std::size_t in_target = 0, named = 0;
    for (const auto& e : samples) {
      if (e.at("stack").get<std::string>().find("named_work (") == std::string::npos) continue;
      ++in_target;
      named += e.at("thread_name") == t.at("name");
      if (e.at("thread_name") != t.at("name")) ADD_FAILURE() << "reported as " << e.at("thread_name");
    }
    EXPECT_GT(in_target, samples.size() * 9 / 10);
    EXPECT_EQ(named, in_target) << "thread " << t.at("name");
  }
}

// A thread that reuses a finished thread's ident (glibc recycles its stack and
// pthread_t), and often its Thread object's and ident int's addresses (the
// allocator recycles those), gets its own name, not the finished thread's.
TEST_P(PyStackE2E, ThreadReusingAFinishedThreadsIdentGetsItsOwnName) {
  Workload workload(GetParam(), "thread_relay.py", {"0.5", "3"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const auto& threads = truth.at("threads");
  ASSERT_EQ(threads.size(), 3u);
  std::set<long> idents;
  for (const auto& t : threads) idents.insert(t.at("ident").get<long>());
  ASSERT_LT(idents.size(), threads.size()) << "no ident was reused, nothing to check: " << threads;
  auto events = pyebpf.events("py_stack");
  for (const auto& t : threads) {
    std::size_t in_leg = 0, named = 0;
    for (const auto& e : of_tid(events, t.at("native_id").get<long>())) {
      if (e.at("stack").get<std::string>().find("relay_leg (") == std::string::npos) continue;
      ++in_leg;
      named += e.at("thread_name") == t.at("name");
    }
    EXPECT_GT(in_leg, 5u) << "too few samples of " << t.at("name");
    EXPECT_EQ(named, in_leg) << t.at("name") << " reported under another name; threads: " << threads;
  }
}

// A code object made at the address of one freed before it is named after
// itself: where the target counts the code objects it frees (3.14+), the
// walker remembers code objects across samples only while that count stands
// still (bpf/python.bpf.h, pyebpf_memo_epoch). Each function runs 50 ms, so a
// sample named after the function before it lies far outside its window.
TEST_P(PyStackE2E, CodeObjectAtAFreedOnesAddressIsNamedAfterItself) {
  Workload workload(GetParam(), "code_churn.py", {"40", "0.05"});
  Pyebpf pyebpf(args(workload.pid(), {"--pystack-frequency", "999"}));
  Json truth = profile(workload, pyebpf);

  const auto& functions = truth.at("functions");
  std::map<std::string, Json> by_name;
  std::set<std::uint64_t> addresses;
  for (const auto& f : functions) {
    by_name[f.at("name")] = f;
    addresses.insert(f.at("code").get<std::uint64_t>());
  }
  if (GetParam().minor >= 14) {  // where code objects are remembered across samples
    ASSERT_LT(addresses.size(), functions.size()) << "no code address was reused, nothing to check";
  }
  std::size_t judged = 0;
  std::vector<std::string> wrong;
  for (const auto& e : of_tid(pyebpf.events("py_stack"), workload.ready().at("tid").get<long>())) {
    const std::string stack = e.at("stack");
    auto at = stack.find("churn_");
    if (at == std::string::npos) continue;
    ++judged;
    auto f = by_name.find(stack.substr(at, 10));
    const double ts = e.at("ts_us").get<double>(), slack = 2000;
    if (f == by_name.end() || ts < f->second.at("start_us").get<double>() - slack ||
        ts > f->second.at("end_us").get<double>() + slack)
      wrong.push_back(e.at("ts_us").dump() + ": " + stack.substr(at));
  }
  EXPECT_GT(judged, 500u) << "too few samples in the churned functions";  // ~2,000: 2 s of CPU at 999 Hz
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " samples named after a function not running at their time, e.g. "
                             << testing::PrintToString(std::vector<std::string>(
                                    wrong.begin(), wrong.begin() + std::min<std::size_t>(wrong.size(), 5)))
                             << "; functions: " << functions.dump();
}

TEST_P(PyStackE2E, EveryBusyCpuIsSampledAtTheSetRate) {
  // One burning target per CPU. pyebpf's own wakeups must not keep step with
  // its sampling timer: a reader woken by each sample ran on the other CPU
  // just before that CPU's sample, and the target there lost up to 90% of its
  // samples for stretches of a second.
  WholeMachine alone;  // a neighbour test's load would take CPU the samples are counted against
  const unsigned burners = std::clamp(std::thread::hardware_concurrency(), 2u, 8u);
  std::vector<std::unique_ptr<Workload>> workloads;
  std::vector<std::string> pyebpf_args{"-e", "e2e", "--enable", "py_stack", "-p"};
  for (unsigned i = 0; i < burners; ++i) {
    workloads.push_back(std::make_unique<Workload>(GetParam(), "cpu_shares.py", std::vector<std::string>{"3"}));
    pyebpf_args.push_back(std::to_string(workloads.back()->pid()));
  }
  Pyebpf pyebpf(pyebpf_args);
  pyebpf.wait_ready();
  const auto stolen_before = stolen_seconds();
  for (auto& w : workloads) w->go();
  std::vector<Json> truths;
  for (auto& w : workloads) truths.push_back(w->result());
  const double stolen_per_cpu = most_stolen(stolen_before, stolen_seconds());
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();

  for (std::size_t i = 0; i < truths.size(); ++i) {
    const Json& truth = truths[i];
    std::size_t burning = 0;
    for (const auto& e : of_tid(pyebpf.events("py_stack"), truth.at("tid").get<long>())) {
      // Tids repeat across containers: each workload is pid 1 in its own.
      if (e.at("pid") == workloads[i]->pid())
        burning += e.at("stack").get<std::string>().find("burn_cpu (") != std::string::npos;
    }
    const double expected = truth.at("cpu_seconds").get<double>() * 99;
    EXPECT_GT(static_cast<double>(burning), 0.8 * expected) << "tid " << truth.at("tid") << "\n"
                                                            << pyebpf.stderr_text();
    EXPECT_LT(static_cast<double>(burning), 1.1 * (expected + stolen_per_cpu * 99))
        << "tid " << truth.at("tid") << ", " << stolen_per_cpu << " s stolen by the hypervisor from one CPU";
  }
}

// A script that never imports threading has no threading._active to name
// its threads from. The failed look-up must be remembered and retried with a
// back-off, not made again for each sample: it read every key of sys.modules,
// ~120 reads of the target's memory per sample, a third of a core at 999 Hz
// (issue 31). The summary counts pyebpf's reads of target memory.
TEST_P(PyStackE2E, ThreadlessTargetCostsNoReadPerSample) {
  Workload workload(GetParam(), "threadless.py", {"3"});
  Pyebpf pyebpf(args(workload.pid(), {"--pystack-frequency", "999"}));
  Json truth = profile(workload, pyebpf);
  if (truth.at("threading_imported").get<bool>()) GTEST_SKIP() << "this build imports threading at start-up";

  const auto samples = pyebpf.events("py_stack");
  ASSERT_GT(samples.size(), 1500u) << "too few samples to judge a cost per sample";
  std::smatch reads;
  const std::string err = pyebpf.stderr_text();
  ASSERT_TRUE(std::regex_search(err, reads, std::regex(R"((\d+) reads of target memory)"))) << err;
  const double per_sample = std::stod(reads[1]) / static_cast<double>(samples.size());
  EXPECT_LT(per_sample, 1.0) << reads[0] << " for " << samples.size() << " samples";
  // and the samples are named all the same
  const auto spinning = std::count_if(samples.begin(), samples.end(), [](const Json& e) {
    return e.at("leaf_func") == "spin" && e.at("thread_name") == e.at("comm");
  });
  EXPECT_GT(static_cast<double>(spinning), 0.95 * static_cast<double>(samples.size()));
}

TEST_P(PyStackE2E, ThreadsRunningWithoutTheGilKeepTheirStacks) {
  Workload workload(GetParam(), "gil_released.py", {"1.5"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const auto& compressor = truth.at("compressor");
  auto samples = of_tid(pyebpf.events("py_stack"), compressor.at("tid").get<long>());
  ASSERT_GT(compressor.at("cpu_in_compress").get<double>(), 1.0) << "the workload must spend its time in C";
  // 99 samples per CPU-second, most of them in zlib with the GIL released. A
  // profiler that loses such threads gets none.
  EXPECT_GT(static_cast<double>(samples.size()), 0.75 * 99 * compressor.at("cpu_in_compress").get<double>())
      << pyebpf.stderr_text();
  std::size_t in_loop = 0;
  for (const auto& e : samples) {
    in_loop += e.at("leaf_func") == "compress_loop";
    EXPECT_EQ(e.at("thread_name"), "Compressor");
  }
  EXPECT_GE(in_loop, samples.size() * 9 / 10) << "the Python frame calling zlib.compress is the leaf";
}

TEST_P(PyStackE2E, DeepStacksAreWalkedWholeOrCutAtTheLimit) {
  // Each of the three threads burns 1 s of its CPU time; they share the GIL,
  // so the run takes ~3 s, ~100 samples a thread at the default rate.
  Workload workload(GetParam(), "recursion.py", {"1"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  auto events = pyebpf.events("py_stack");
  auto deep = of_tid(events, truth.at("threads").at("Deep150").get<long>());
  auto shallow = of_tid(events, truth.at("threads").at("Deep100").get<long>());
  ASSERT_GT(deep.size(), 10u);
  ASSERT_GT(shallow.size(), 10u);
  auto count = [](const std::string& stack, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = stack.find(needle); pos != std::string::npos; pos = stack.find(needle, pos + 1)) ++n;
    return n;
  };
  // A few samples may land while the recursion is still being built; the
  // rest are at the bottom, where the stack is cut at the limit.
  std::size_t at_bottom = 0;
  for (const auto& e : deep) {
    if (e.at("leaf_func") != "burn_cpu") continue;
    ++at_bottom;
    EXPECT_EQ(e.at("stack_depth"), 128);
    EXPECT_EQ(e.at("truncated"), true);
    EXPECT_EQ(count(e.at("stack"), "recurse ("), 126u) << "128 kept: burn_cpu, bottom and 126 recurse frames";
  }
  EXPECT_GE(at_bottom, deep.size() * 9 / 10);
  for (const auto& e : shallow) {
    if (e.at("leaf_func") != "burn_cpu") continue;
    EXPECT_EQ(e.at("truncated"), false);
    EXPECT_EQ(count(e.at("stack"), "recurse ("), 100u);
    // co_qualname (3.11+) names the class; co_name before.
    const std::string root = GetParam().minor >= 11 ? "Thread._bootstrap (" : "_bootstrap (";
    EXPECT_EQ(e.at("stack").get<std::string>().rfind(root, 0), 0u) << "root frame comes first";
  }
  // 3.11+ keep frames on per-thread stack chunks, and the walker reads them a
  // block at a time: Wide40's large frames span several chunks and blocks.
  auto wide = of_tid(events, truth.at("threads").at("Wide40").get<long>());
  ASSERT_GT(wide.size(), 10u);
  std::size_t wide_at_bottom = 0;
  for (const auto& e : wide) {
    if (e.at("leaf_func") != "burn_cpu") continue;
    ++wide_at_bottom;
    EXPECT_FALSE(e.value("partial", false)) << e.dump();
    EXPECT_EQ(e.at("truncated"), false);
    EXPECT_EQ(count(e.at("stack"), "wide ("), 40u) << e.dump();
  }
  EXPECT_GE(wide_at_bottom, wide.size() * 9 / 10);
}

// 3.11+ keep a coroutine's or generator's frame in its heap object, off the
// thread's stack that the walker reads a block at a time.
TEST_P(PyStackE2E, CoroutineAndGeneratorFramesAreWalked) {
  Workload workload(GetParam(), "coroutines.py", {"3"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  const std::map<std::string, std::string> leaf_chains{
      {"Async", frame_at(truth, "outer", "coro_outer") + ";" + frame_at(truth, "middle", "coro_middle") + ";" +
                    frame_at(truth, "inner", "coro_spin")},
      {"Gen", frame_at(truth, "consume", "gen_next") + ";" + frame_at(truth, "produce", "gen_spin")}};
  const auto events = pyebpf.events("py_stack");
  for (const auto& [thread, chain] : leaf_chains) {
    auto samples = of_tid(events, truth.at("threads").at(thread).get<long>());
    ASSERT_GT(samples.size(), 20u) << thread;
    std::size_t matching = 0;
    for (const auto& e : samples) {
      const std::string stack = e.at("stack");
      matching += stack.ends_with(chain);
      EXPECT_FALSE(e.value("partial", false)) << e.dump();
    }
    // The rest land between two spins (the event loop, the generator resuming).
    EXPECT_GE(matching, samples.size() * 9 / 10) << thread << ": " << samples.front().at("stack");
  }
}

TEST_P(PyStackE2E, NonAsciiNamesAndPathsDecode) {
  Workload workload(GetParam(), "unicode_names.py", {"2"});
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  auto samples = of_tid(pyebpf.events("py_stack"), truth.at("tid").get<long>());
  ASSERT_GT(samples.size(), 20u);
  const std::string file = truth.at("file");
  std::size_t found = 0;
  for (const auto& e : samples) {
    const std::string stack = e.at("stack");
    found += stack.find("計算する (" + file + ":") != std::string::npos &&
             stack.find("función (" + file + ":") != std::string::npos;
  }
  EXPECT_GE(found, samples.size() * 9 / 10) << "example: " << samples.front().at("stack");
}

TEST_P(PyStackE2E, ContainerisedTargetReportsHostAndNamespaceIds) {
  // Its own pid namespace, as in a container: the workload sees itself as pid 1.
  Workload workload(GetParam(), "threads.py", {"2"}, {"unshare", "--pid", "--fork", "--kill-child"});
  ASSERT_EQ(workload.ready().at("pid"), 1);
  ASSERT_NE(workload.pid(), 1);
  Pyebpf pyebpf(args(workload.pid()));
  Json truth = profile(workload, pyebpf);

  auto events = pyebpf.events("py_stack");
  ASSERT_FALSE(events.empty());
  std::map<long, std::string> names;  // namespace tid -> name, as the workload saw them
  for (const auto& t : truth.at("threads")) names[t.at("native_id").get<long>()] = t.at("name");
  std::size_t matched = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e.at("pid"), workload.pid());
    EXPECT_EQ(e.at("container_pid"), 1);
    EXPECT_NE(e.at("tid"), e.at("container_tid"));
    auto it = names.find(e.at("container_tid").get<long>());
    if (it != names.end() && e.at("stack").get<std::string>().find("named_work (") != std::string::npos) {
      ++matched;
      EXPECT_EQ(e.at("thread_name"), it->second);
    }
  }
  EXPECT_GT(matched, 10u) << "samples of the named threads, identified by their namespace tids";
}

TEST_P(PyStackE2E, TargetExitingIsFlushedAndEndsTheRun) {
  Workload workload(GetParam(), "exits.py", {"1.5"});
  Pyebpf pyebpf(args(workload.pid()));
  pyebpf.wait_ready();
  workload.go();
  pyebpf.wait_exit(30s);
  EXPECT_EQ(pyebpf.exit_status(), 0);
  EXPECT_GT(pyebpf.events("py_stack").size(), 50u);
  EXPECT_NE(pyebpf.stderr_text().find("pid " + std::to_string(workload.pid()) + " ("), std::string::npos);
  EXPECT_NE(pyebpf.stderr_text().find("exited"), std::string::npos) << pyebpf.stderr_text();
}

TEST_P(PyStackE2E, OtherTargetsGoOnWhenOneExits) {
  Workload leaving(GetParam(), "exits.py", {"0.5"});
  Workload staying(GetParam(), "cpu_shares.py", {"600"});  // burns until killed
  Pyebpf pyebpf({"-p", std::to_string(leaving.pid()), std::to_string(staying.pid()), "-e", "e2e"});
  pyebpf.wait_ready();
  leaving.go();
  staying.go();
  ASSERT_TRUE(pyebpf.child().wait_for_stderr("pid " + std::to_string(leaving.pid()) + " (", 30s));
  ASSERT_TRUE(pyebpf.child().wait_for_stderr("exited", 60s));
  std::this_thread::sleep_for(2s);
  pyebpf.stop();
  EXPECT_EQ(pyebpf.exit_status(), 0);
  long leaving_last_us = 0;
  std::size_t from_leaving = 0, from_staying_after = 0;
  for (const auto& e : pyebpf.events("py_stack")) {
    if (e.at("pid") == leaving.pid()) {
      ++from_leaving;
      leaving_last_us = std::max(leaving_last_us, e.at("ts_us").get<long>());
    }
  }
  for (const auto& e : pyebpf.events("py_stack"))
    from_staying_after += e.at("pid") == staying.pid() && e.at("ts_us").get<long>() > leaving_last_us;
  EXPECT_GT(from_leaving, 25u) << pyebpf.stderr_text();  // ~50: 0.5 s of CPU at 99 Hz
  EXPECT_GT(from_staying_after, 10u) << "the remaining target must go on being sampled after the other exited";
}

INSTANTIATE_TEST_SUITE_P(Pythons, PyStackE2E, ::testing::ValuesIn(test_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
