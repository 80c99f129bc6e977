// SPDX-License-Identifier: Apache-2.0
// Following processes end to end: workers forked and recycled after pyebpf
// started (Debian's gunicorn under wrk, multiprocessing pools), programs
// exec'd through a shell, another CPython version in the child, and --name.
// Ground truth is what the servers and workloads record themselves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

const PythonBuild kDebian{"debian-3.11", "/usr/bin/python3.11", 11};

std::map<long, std::vector<Json>> by_pid(const std::vector<Json>& events) {
  std::map<long, std::vector<Json>> out;
  for (const auto& e : events) out[e.at("pid").get<long>()].push_back(e);
  return out;
}

std::size_t with_function(const std::vector<Json>& samples, const std::string& function) {
  std::size_t n = 0;
  for (const auto& e : samples) n += e.at("stack").get<std::string>().find(function + " (") != std::string::npos;
  return n;
}

std::optional<PythonBuild> pyenv_312() {
  for (const auto& b : test_pythons(12, 12)) {
    if (b.label.rfind("pyenv", 0) == 0) return b;
  }
  return std::nullopt;
}

// Every worker that served requests (the server's access log) is sampled in
// serve_request, and its handoffs (gthread: one per request) or inline
// requests (sync) are counted: together >= 99% of the requests served (the
// app's import delays a worker's first request past pyebpf's attach, as a
// real app's does: children_app.py; wrk's last in-flight requests are seen
// but not logged, so the count is a little over 100% when nothing is lost).
// Sampling is checked where it is certain: a request burns 5 ms of CPU, so
// 20 of them give ~10 samples at 99 Hz (a worker stopped by the upgrade may
// have served one: half a sample).
constexpr std::uint64_t kSampledRequests = 20;

// pyebpf's log lines about one process, for a failure message.
std::string log_about(const std::string& log, long pid) {
  std::string out;
  std::istringstream in(log);
  const std::string needle = "pid " + std::to_string(pid);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle + " ") != std::string::npos || line.find(needle + ":") != std::string::npos)
      out += line + "\n";
  return out;
}

void expect_every_worker_traced(const Json& truth, Pyebpf& pyebpf, const std::string& worker) {
  const auto& served = truth.at("served");
  const auto requests = truth.at("requests").get<std::uint64_t>();
  auto samples = by_pid(pyebpf.events("py_stack"));
  auto handoffs = by_pid(pyebpf.events("handoff"));
  auto queues = by_pid(pyebpf.events("request_queue"));
  std::uint64_t covered = 0;
  for (const auto& [pid_text, n] : served.items()) {
    const long pid = std::stol(pid_text);
    if (n.get<std::uint64_t>() >= kSampledRequests) {
      EXPECT_GT(with_function(samples[pid], "serve_request"), 0u)
          << "worker " << pid << " served " << n << ", " << samples[pid].size()
          << " samples, the first: " << (samples[pid].empty() ? Json() : samples[pid].front()).dump()
          << "\npyebpf about it:\n"
          << log_about(pyebpf.stderr_text(), pid);
    }
    std::uint64_t seen = 0;
    if (worker == "gthread") {
      seen = handoffs[pid].size();
    } else {
      for (const auto& q : queues[pid]) seen += q.at("served_inline").get<std::uint64_t>();
    }
    EXPECT_GT(seen, 0u) << "worker " << pid << " served " << n << " requests";
    covered += seen;
  }
  EXPECT_GE(static_cast<double>(covered), 0.99 * static_cast<double>(requests))
      << covered << " of " << requests << " requests seen; stderr:\n"
      << pyebpf.stderr_text();
}

class GunicornRecycling : public ::testing::TestWithParam<std::string> {};

// Two workers recycled every 50 requests under 10 s of wrk load.
TEST_P(GunicornRecycling, EveryWorkerIsTracedAcrossRecycling) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/gunicorn")) << "run tools/install-deps";
  const std::string worker = GetParam();
  Workload workload(kDebian, "children_gunicorn.py", {worker, "2", "50", "10"});
  const int arbiter = workload.ready().at("pid").get<int>();  // started before pyebpf: the target
  Pyebpf pyebpf({"-p", std::to_string(arbiter), "-e", "e2e", "--enable", "py_stack", "handoff", "--rq-interval", "1"});
  Json truth = profile(workload, pyebpf, 120s);

  ASSERT_GE(truth.at("served").size(), 6u) << "workers were not recycled several times: " << truth.dump();
  expect_every_worker_traced(truth, pyebpf, worker);
  EXPECT_NE(pyebpf.stderr_text().find("service pid " + std::to_string(arbiter)), std::string::npos)
      << "the summary groups the workers under their arbiter:\n"
      << pyebpf.stderr_text();
}

// A deploy's in-place upgrade under load: SIGUSR2 makes the arbiter fork and
// re-exec gunicorn (a new master on the same socket, with its own recycled
// workers), then the old arbiter is stopped. The re-exec'd master is found
// as CPython again, every worker of both is traced, and the run goes on
// after the target given with -p is gone.
TEST(GunicornUpgrade, ReexecutedMasterAndItsWorkersAreTraced) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/gunicorn")) << "run tools/install-deps";
  Workload workload(kDebian, "children_gunicorn.py", {"sync", "2", "50", "10", "upgrade"});
  const int arbiter = workload.ready().at("pid").get<int>();
  Pyebpf pyebpf({"-p", std::to_string(arbiter), "-e", "e2e", "--enable", "py_stack", "handoff", "--rq-interval", "1"});
  Json truth = profile(workload, pyebpf, 120s);

  const long master = truth.at("new_master").get<long>();
  std::set<long> new_workers;
  for (const auto& p : truth.at("new_workers")) new_workers.insert(p.get<long>());
  std::uint64_t served_by_new = 0;
  for (const auto& [pid_text, n] : truth.at("served").items())
    served_by_new += new_workers.count(std::stol(pid_text)) ? n.get<std::uint64_t>() : 0;
  ASSERT_GT(served_by_new, 100u) << "the new master's workers served too little to judge: " << truth.dump();
  expect_every_worker_traced(truth, pyebpf, "sync");
  const std::string err = pyebpf.stderr_text();
  EXPECT_NE(err.find("pid " + std::to_string(master) + " ("), std::string::npos) << err;
  EXPECT_NE(err.find(", exec'd "), std::string::npos) << "the re-exec'd master is rediscovered:\n" << err;
}

INSTANTIATE_TEST_SUITE_P(Workers, GunicornRecycling, ::testing::Values("sync", "gthread"),
                         [](const auto& info) { return info.param; });

class PoolRecycling : public ::testing::TestWithParam<std::string> {};

// Pool(2, maxtasksperchild=2) over 8 tasks: at least 4 worker processes,
// forked copies or spawned (exec'd) interpreters, each sampled in its task.
TEST_P(PoolRecycling, EveryPoolWorkerIsSampledInItsTasks) {
  Workload workload(kDebian, "children_pool.py", {GetParam(), "8", "2"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 120s);

  std::map<long, int> tasks;
  for (const auto& p : truth.at("task_pids")) ++tasks[p.get<long>()];
  ASSERT_GE(tasks.size(), 4u) << truth.dump();
  auto samples = by_pid(pyebpf.events("py_stack"));
  for (const auto& [pid, n] : tasks) {
    // 0.4 s of CPU per task at the default 99 Hz: about 40 samples each.
    EXPECT_GE(with_function(samples[pid], "pool_task"), 10u * n) << "pool worker " << pid << " ran " << n << " tasks";
  }
}

// The bytes of one field of bpftool's JSON dump of a map pyebpf created
// without BTF: a list of "0x.." strings, little-endian.
std::vector<std::uint8_t> dumped_bytes(const Json& hex) {
  std::vector<std::uint8_t> out;
  for (const auto& b : hex) out.push_back(static_cast<std::uint8_t>(std::stoul(b.get<std::string>(), nullptr, 16)));
  return out;
}

// A u32 from a map dump: BPF stores it in host order, little-endian on x86.
std::uint32_t le32(const std::uint8_t* b) {
  return b[0] | b[1] << 8 | b[2] << 16 | static_cast<std::uint32_t>(b[3]) << 24;
}

// The dump of the one map `name` of process `pid` (every BPF object of a run
// shares it).
Json bpftool_dump(pid_t pid, const std::string& name) {
  const auto ids = maps_named(pid, name);
  EXPECT_EQ(ids.size(), 1u) << "one " << name << " map, shared by every BPF object of pid " << pid;
  return ids.empty() ? Json::array() : bpftool({"map", "dump", "id", std::to_string(*ids.begin())});
}

// py_procs' counting filter (bpf/python.h) after workers were forked (by
// BPF, then registered by user space) or spawned (exec'd, rediscovered) and
// all ended: every live entry's slot counts it, and the counts add up to the
// entries exactly, so no writer missed its +1 (a target hidden from offcpu
// and gil) or its -1 (a filter that fills up and stops filtering).
TEST_P(PoolRecycling, TargetFilterCountsEachLiveTargetOnce) {
  Workload workload(kDebian, "children_pool.py", {GetParam(), "8", "2"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack", "offcpu"});
  pyebpf.wait_ready();
  workload.go();
  Json truth = workload.result(120s);
  std::this_thread::sleep_for(1s);  // the workers' exits reach pyebpf

  std::vector<std::uint32_t> entries;
  for (const auto& e : bpftool_dump(pyebpf.child().pid(), "py_procs")) {
    auto key = dumped_bytes(e.at("key"));
    ASSERT_EQ(key.size(), 4u);
    entries.push_back(le32(key.data()));
  }
  Json slots_dump = bpftool_dump(pyebpf.child().pid(), "py_proc_slots");
  ASSERT_EQ(slots_dump.size(), 1u) << "py_proc_slots holds one value: the filter's counters";
  auto bytes = dumped_bytes(slots_dump[0].at("value"));
  const auto slots = static_cast<std::uint32_t>(bytes.size() / 4);  // u32 counters, slot = tgid % slots
  ASSERT_GT(slots, 0u);
  auto count = [&](std::uint32_t slot) { return le32(&bytes[4 * slot]); };
  std::uint64_t total = 0;
  for (std::uint32_t slot = 0; slot < slots; ++slot) total += count(slot);
  pyebpf.stop();

  ASSERT_GE(std::set<long>(truth.at("task_pids").begin(), truth.at("task_pids").end()).size(), 4u) << truth.dump();
  EXPECT_FALSE(entries.empty()) << "the pool's parent is a target";
  for (std::uint32_t pid : entries) EXPECT_GE(count(pid % slots), 1u) << "pid " << pid;
  EXPECT_EQ(total, entries.size()) << pyebpf.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(StartMethods, PoolRecycling, ::testing::Values("fork", "spawn"),
                         [](const auto& info) { return info.param; });

struct SpawnCase {
  std::string mode;  // direct | shell
  bool pyenv_child;  // the child runs pyenv 3.12 under a Debian 3.11 parent
};

class Spawned : public ::testing::TestWithParam<SpawnCase> {};

// A Debian 3.11 parent runs a child program, directly or through `sh -c
// '...; exec python'`: the exec'd interpreter (of the same or another
// CPython version) is rediscovered and sampled in its own code; the shell
// between them is followed but never a target.
TEST_P(Spawned, ExecdChildIsRediscoveredAndSampled) {
  PythonBuild child = kDebian;
  if (GetParam().pyenv_child) {
    auto b = pyenv_312();
    ASSERT_TRUE(b) << "pyenv 3.12 is missing: run tools/install-deps";
    child = *b;
  }
  Workload workload(kDebian, "children_spawn.py", {GetParam().mode, child.path});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 60s);

  const long pid = truth.at("child").at("pid").get<long>();
  auto samples = by_pid(pyebpf.events("py_stack"))[pid];
  // 1.5 s of CPU at 99 Hz: ~150 samples; the interpreter start-up before child_work is not counted.
  EXPECT_GE(with_function(samples, "child_work"), 100u) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  EXPECT_NE(err.find("CPython " + truth.at("child").at("version").get<std::string>() + ", exec'd"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("(sh, CPython"), std::string::npos) << "the shell is no target:\n" << err;
}

INSTANTIATE_TEST_SUITE_P(Modes, Spawned,
                         ::testing::Values(SpawnCase{"direct", false}, SpawnCase{"shell", false},
                                           SpawnCase{"direct", true}, SpawnCase{"shell", true}),
                         [](const auto& info) {
                           return info.param.mode + (info.param.pyenv_child ? "_pyenv312_child" : "_same_python");
                         });

// The exec'd interpreter forks first thing, as a re-exec'd server master
// starts its workers: the copy is sampled in its work, whether its fork came
// after pyebpf read the interpreter (the fork event) or before (found among
// the interpreter's children once read: under load on a busy host).
TEST(EarlyForkE2E, ChildForkedAtOnceByAnExecdInterpreterIsSampled) {
  Workload workload(kDebian, "children_spawn.py", {"forks_first", kDebian.path});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 60s);

  const long forked = truth.at("child").at("forked").get<long>();
  // 1.5 s of CPU at 99 Hz: ~150 samples.
  EXPECT_GE(with_function(by_pid(pyebpf.events("py_stack"))[forked], "child_work"), 100u) << pyebpf.stderr_text();
}

// A target that execs a shell, which spins and then execs another CPython
// version in the same pid: the old program is dropped with a line when it
// execs, the shell is never walked as Python, the new interpreter is
// rediscovered and sampled, and no sample holds a frame that is not real
// code of one program or the other (what walking a new address space with
// the old layout would print).
TEST(ExecE2E, TargetThatExecsIsDroppedAndItsNewInterpreterFound) {
  auto pyenv = pyenv_312();
  ASSERT_TRUE(pyenv) << "pyenv 3.12 is missing: run tools/install-deps";
  Workload workload(kDebian, "children_exec_self.py", {pyenv->path});
  const pid_t pid = workload.pid();
  Pyebpf pyebpf({"-p", std::to_string(pid), "-e", "e2e", "--enable", "py_stack", "--pystack-frequency", "199"});
  pyebpf.wait_ready();
  workload.go();
  auto line = workload.child().wait_for_line("CHILD ", 60s);
  ASSERT_TRUE(line) << workload.child().stderr_text();
  const Json child = Json::parse(*line);
  ASSERT_EQ(child.at("pid").get<long>(), pid);
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();

  const auto samples = by_pid(pyebpf.events("py_stack"))[pid];
  // 1 s and 1.5 s of CPU at 199 Hz: ~200 and ~300 samples.
  EXPECT_GE(with_function(samples, "before_exec"), 120u) << pyebpf.stderr_text();
  EXPECT_GE(with_function(samples, "child_work"), 180u) << pyebpf.stderr_text();
  for (const auto& e : samples) {
    const std::string stack = e.at("stack");
    EXPECT_NE(e.at("comm"), "sh") << "the shell was sampled as Python: " << stack;
    EXPECT_FALSE(stack.find("before_exec (") != std::string::npos && stack.find("child_work (") != std::string::npos)
        << stack;
    if (stack.empty()) continue;  // no Python frame at that instant
    for (const auto& frame : split(stack, ';')) {
      const auto open = frame.find(" (");
      ASSERT_NE(open, std::string::npos) << frame;
      const std::string file = frame.substr(open + 2, frame.rfind(':') - open - 2);
      // <unknown>: a code object freed before user space read it (a
      // module's body, run once at import), honest rather than wrong.
      EXPECT_TRUE(file.rfind("<frozen ", 0) == 0 || file == "<unknown>" || std::filesystem::exists(file))
          << "a frame that is no code of either program: " << frame << " in " << stack;
    }
  }
  const std::string err = pyebpf.stderr_text();
  EXPECT_NE(err.find("pid " + std::to_string(pid) + " (python3.11) exec'd sh; "), std::string::npos) << err;
  EXPECT_NE(err.find("CPython " + child.at("version").get<std::string>() + ", exec'd"), std::string::npos) << err;
}

// --no-children keeps the targets given: the child the target runs is
// neither attached nor sampled, the target itself still is.
TEST(NoChildrenE2E, OnlyTheGivenTargetIsTraced) {
  Workload workload(kDebian, "children_spawn.py", {"direct", kDebian.path});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "--no-children", "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 60s);

  const long child = truth.at("child").at("pid").get<long>();
  auto samples = by_pid(pyebpf.events("py_stack"));
  EXPECT_EQ(samples[child].size(), 0u) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(err.find("pid " + std::to_string(child)), std::string::npos) << err;
  EXPECT_NE(err.find("pid " + std::to_string(workload.pid()) + " ("), std::string::npos) << err;
}

// --max-targets 1 with the pool's parent as the target: every worker it
// forks is refused, none is sampled, and the summary counts the refusals.
TEST(MaxTargetsE2E, RefusalsAreCountedInTheSummary) {
  Workload workload(kDebian, "children_pool.py", {"fork", "4", "1"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "--max-targets", "1", "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 60s);

  std::set<long> workers;
  for (const auto& p : truth.at("task_pids")) workers.insert(p.get<long>());
  ASSERT_GE(workers.size(), 4u) << truth.dump();
  auto samples = by_pid(pyebpf.events("py_stack"));
  for (long pid : workers) EXPECT_EQ(with_function(samples[pid], "pool_task"), 0u) << "refused worker " << pid;
  const std::string err = pyebpf.stderr_text();
  const auto at = err.find(" processes not traced: --max-targets 1 reached");
  ASSERT_NE(at, std::string::npos) << err;
  const auto line = err.rfind('\n', at) + 1;
  const std::string count = err.substr(line, at - line);
  EXPECT_GE(std::stoul(count.substr(count.find_last_of(' ') + 1)), workers.size()) << err;
}

// A PID that is gone before pyebpf attaches is reported; the others are traced.
TEST(GoneTargetE2E, IsReportedAndTheOthersAreTraced) {
  Child gone({"/bin/true"});
  ASSERT_TRUE(gone.wait(10s));
  Workload workload(kDebian, "children_spawn.py", {"direct", kDebian.path});
  Pyebpf pyebpf(
      {"-p", std::to_string(gone.pid()), "-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack"});
  Json truth = profile(workload, pyebpf, 60s);

  const std::string err = pyebpf.stderr_text();
  EXPECT_NE(err.find("pid " + std::to_string(gone.pid()) + " does not exist"), std::string::npos) << err;
  const long child = truth.at("child").at("pid").get<long>();
  EXPECT_GE(with_function(by_pid(pyebpf.events("py_stack"))[child], "child_work"), 100u) << err;
}

// --name before any process matches: pyebpf waits and says so, then traces a
// matching CPython started later and skips a matching shell with one line.
TEST(NameE2E, TracesMatchesStartedLaterAndSkipsNonPython) {
  const std::string marker = "pyebpf_children_marker_" + std::to_string(getpid());
  Pyebpf pyebpf({"-n", marker, "-e", "e2e", "--enable", "py_stack"});
  pyebpf.wait_ready();
  EXPECT_NE(pyebpf.stderr_text().find("no process matches --name '" + marker + "' yet"), std::string::npos)
      << pyebpf.stderr_text();
  Child shell({"/bin/sh", "-c", "sleep 8", marker});
  Child python({kDebian.path, workload_path("children_child.py"), marker});
  auto line = python.wait_for_line("CHILD ", 30s);
  ASSERT_TRUE(line) << python.stderr_text();
  const long pid = Json::parse(*line).at("pid").get<long>();
  std::this_thread::sleep_for(6s);  // the shell is given up 5 s after its exec
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  EXPECT_GE(with_function(by_pid(pyebpf.events("py_stack"))[pid], "child_work"), 100u) << pyebpf.stderr_text();
  // The shell (or the sleep it execs) is one info line, not an error.
  const std::string err = pyebpf.stderr_text();
  auto at = err.find("pid " + std::to_string(shell.pid()) + " (");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("--name, exec'd sh): not traced", at), std::string::npos) << err;
}

}  // namespace
}  // namespace pyebpf::e2e
