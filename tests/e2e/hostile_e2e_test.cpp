// SPDX-License-Identifier: Apache-2.0
// Targets that feed pyebpf hostile input: crafted ELF files mapped under
// libpython's name (tests/workloads/hostile_elves.py), and a target that
// corrupts its own frames, code objects, strings and thread names
// (tests/workloads/hostile_self.py). pyebpf must never crash, hang or print
// garbage, and must profile what is intact as usual.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

class HostileElvesE2E : public ::testing::TestWithParam<PythonBuild> {};

TEST_P(HostileElvesE2E, CraftedElfFilesNamedLikeLibpythonAreSkipped) {
  Workload workload(GetParam(), "hostile_elves.py", {"3"});
  const auto crafted = workload.ready().at("crafted");
  ASSERT_EQ(crafted.size(), 4u);
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "hostile", "--enable", "py_stack"});
  pyebpf.wait_ready();
  workload.go();
  const double cpu_seconds = workload.result().at("cpu_seconds");
  pyebpf.stop();
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(pyebpf.exit_status(), 0) << err;
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  // The crafted files come before the executable among the candidates where
  // the interpreter is not a libpython (debian): each is skipped with a
  // warning naming what is wrong with it. The interpreter named is the real one.
  for (const std::string name : GetParam().distro ? crafted : Json::array()) {
    EXPECT_TRUE(std::regex_search(err, std::regex("pid " + std::to_string(workload.pid()) + ": skipped /.*/" + name +
                                                  ": a damaged ELF file \\([a-zA-Z_ ,]+\\)\n")))
        << name << ":\n"
        << err;
  }
  const auto found = err.find(": CPython 3.11");
  ASSERT_NE(found, std::string::npos) << err;
  const std::string found_line = err.substr(found, err.find('\n', found) - found);
  EXPECT_EQ(found_line.find("libpython3-"), std::string::npos) << found_line;
  // The real interpreter is profiled as if nothing had been mapped.
  std::size_t in_spin = 0;
  for (const auto& e : pyebpf.events("py_stack")) {
    in_spin += e.at("stack").get<std::string>().find("spin_in_known_function") != std::string::npos;
  }
  EXPECT_GE(in_spin, static_cast<std::size_t>(cpu_seconds * 99 * 0.5)) << cpu_seconds << " s of CPU";
}

// A shared libpython of this machine's builds (the newest minor): the real
// file the crafted ones are made from.
std::string real_libpython() {
  std::string out;
  int newest = 0;
  for (const auto& p : test_pythons()) {
    const auto lib = std::filesystem::path(p.path).parent_path().parent_path() / "lib" /
                     ("libpython3." + std::to_string(p.minor) + ".so.1.0");
    if (p.setup == RootSetUp::Host && !p.distro && p.minor > newest && std::filesystem::exists(lib)) {
      out = lib.string();
      newest = p.minor;
    }
  }
  return out;
}

// A process whose only libpython is a crafted file is no Python: pyebpf says
// so in one line naming the file and what is wrong with it, exits non-zero,
// and neither crashes nor hangs (run_pyebpf kills it after 30 s: exit 137).
TEST(HostileElfOnlyE2E, ACraftedLibpythonAloneIsRefusedNamingFileAndCause) {
  const std::string source = real_libpython();
  ASSERT_FALSE(source.empty()) << "no pyenv build with a shared libpython";
  TempDir dir;
  const RunResult written = run_program({"python3", workload_path("crafted_libpython.py"), source, dir / "crafted"});
  ASSERT_EQ(written.status, 0) << written.err;
  const Json crafted = Json::parse(written.out);
  // What each variant breaks, as discovery words it (binary::ElfFile::defects).
  const std::map<std::string, std::string> causes = {
      {"truncated", "a damaged ELF file (section headers past the end of the file, program headers past the end"},
      {"huge-sections", "a damaged ELF file (section headers past the end of the file"},
      {"overlapping", "PT_LOAD segments past the end of the file, overlapping PT_LOAD segments"},
      {"unterminated", "a damaged ELF file (string tables without a final NUL)"},
  };
  ASSERT_EQ(crafted.size(), causes.size()) << crafted.dump();
  for (const auto& [variant, cause] : causes) {
    const std::string file = crafted.at(variant);
    Child host({PYEBPF_ELF_HOST, file});
    ASSERT_TRUE(host.wait_for_line("READY", std::chrono::seconds(10))) << variant;
    const std::string pid = std::to_string(host.pid());
    const RunResult r = run_pyebpf({"-p", pid, "-e", "hostile", "--enable", "py_stack", "gil", "offcpu"});
    EXPECT_EQ(r.status, 1) << variant << ": " << r.err;
    EXPECT_EQ(r.out, "") << variant;
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    EXPECT_EQ(err.find('\n'), std::string::npos) << variant << ": one line expected:\n" << r.err;
    EXPECT_EQ(err.rfind("pyebpf: error: pid " + pid + " (pyebpf_elf_host) is not a CPython process: ", 0), 0u) << err;
    EXPECT_NE(err.find("; skipped " + file + ": "), std::string::npos) << err;
    EXPECT_NE(err.find(cause, err.find("; skipped " + file + ": ")), std::string::npos) << variant << ": " << err;
  }
}

// Peak resident memory of a process (VmHWM, kB), 0 once it is gone.
long peak_rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Python stack fields of any event, as "function (file:line);..." text.
std::vector<std::string> python_stacks(const Json& event) {
  std::vector<std::string> out;
  for (const char* field : {"stack", "py_stack", "waiter_py_stack", "holder_py_stack"}) {
    if (event.contains(field) && event.at(field).is_string()) out.push_back(event.at(field));
  }
  return out;
}

// A frame is what the target's intact objects say, or "<unknown>" for both
// name and file: never bytes from around a corrupted object. Intact files are
// .py paths or a frozen module's "<frozen codecs>" (the main thread reads GO
// from stdin through codecs).
::testing::AssertionResult frames_are_names_or_unknown(const std::string& stack) {
  static const std::regex frame(R"(^([A-Za-z_<][A-Za-z0-9_.<>]*) \(([^;()]*):(\d+)\)$)");
  static const std::regex frozen(R"(^<frozen [A-Za-z0-9_.]+>$)");
  for (const std::string& text : split(stack, ';')) {
    std::smatch m;
    if (!std::regex_match(text, m, frame))
      return ::testing::AssertionFailure() << "frame '" << text << "' in " << stack;
    const bool unknown_name = m[1] == "<unknown>", unknown_file = m[2] == "<unknown>";
    const std::string file = m[2];
    const bool intact_file = file.ends_with(".py") || std::regex_match(file, frozen);
    if (unknown_name != unknown_file || (!unknown_file && !intact_file))
      return ::testing::AssertionFailure() << "frame '" << text << "' in " << stack;
  }
  return ::testing::AssertionSuccess();
}

// pyebpf's peak RSS on this target with all four trackers was 103 MB (debian
// 3.11), most of it pyebpf's own pages mapped at start; what the run adds
// once attached is what hostile objects could inflate.
constexpr long kPeakRssBoundKb = 200 * 1024;
constexpr long kRssGrowthBoundKb = 32 * 1024;

class HostileSelfE2E : public ::testing::TestWithParam<PythonBuild> {};

TEST_P(HostileSelfE2E, CorruptedFramesCodeAndNamesAreMarkedNeverPrinted) {
  Workload workload(GetParam(), "hostile_self.py", {"4"});
  const Json threads = workload.ready().at("threads");
  const std::string file = workload.ready().at("file");
  // Corrupted threads sleep 2 ms at a time (usleep): off_cpu events of them need a low threshold.
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "hostile", "--enable", "py_stack", "gil", "gc", "offcpu",
                 "--offcpu-min-total-ms", "1"});
  pyebpf.wait_ready();
  const long attached_kb = peak_rss_kb(pyebpf.child().pid());
  std::atomic<bool> running{true};
  std::atomic<long> peak_kb{0};
  std::thread watch([&] {
    while (running) {
      peak_kb = std::max(peak_kb.load(), peak_rss_kb(pyebpf.child().pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  workload.go();
  workload.result();
  peak_kb = std::max(peak_kb.load(), peak_rss_kb(pyebpf.child().pid()));
  running = false;
  watch.join();
  pyebpf.stop();  // fails the test on any stdout line that is not valid UTF-8 JSON
  const std::string err = pyebpf.stderr_text();
  ASSERT_EQ(pyebpf.exit_status(), 0) << err;
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err;

  for (const auto& e : pyebpf.events()) {
    for (const auto& stack : python_stacks(e)) EXPECT_TRUE(frames_are_names_or_unknown(stack)) << e.dump();
  }
  const auto samples = pyebpf.events("py_stack");
  std::size_t partial = 0;
  for (const auto& e : samples) partial += e.value("partial", false);
  auto of_thread = [&](const char* name) {
    auto out = of_tid(samples, threads.at(name).get<long>());
    EXPECT_GE(out.size(), 10u) << "too few samples of thread " << name;
    return out;
  };
  // Untouched threads: their own stacks, whole, named as before. A thread
  // whose threading name is not a str (or lies about its length) goes by its
  // kernel name instead.
  for (const char* name : {"healthy", "int_name", "lying_name"}) {
    std::size_t whole = 0;
    const auto own = of_thread(name);
    for (const auto& e : own) {
      const std::string stack = e.at("stack");
      whole += !e.value("partial", false) && stack.find("healthy_outer (" + file + ":") != std::string::npos &&
               stack.find(";healthy_inner (" + file + ":") != std::string::npos;
      if (std::string(name) == "healthy")
        EXPECT_EQ(e.at("thread_name"), "healthy");
      else
        EXPECT_EQ(e.at("thread_name"), e.at("comm")) << name;
    }
    EXPECT_GE(whole, own.size() * 9 / 10) << name << ": " << own.front().dump();
  }
  // Corrupted threads: every stack marked partial, cut where the corruption is.
  for (const char* name : {"loop", "wild", "bad_code", "lying_code"}) {
    for (const auto& e : of_thread(name)) {
      EXPECT_TRUE(e.value("partial", false)) << name << ": " << e.dump();
      EXPECT_FALSE(e.at("truncated").get<bool>()) << name << ": " << e.dump();
    }
  }
  for (const char* name : {"bad_code", "lying_code"}) {
    for (const auto& e : of_thread(name)) {
      EXPECT_NE(e.at("stack").get<std::string>().find(";<unknown> (<unknown>:0);spin_in_c_forever ("),
                std::string::npos)
          << name << ": " << e.dump();
    }
  }
  // gil_wait and off_cpu stacks walked through the same corruption are marked
  // the same way: the waiter's stack in a GIL wait, the sleeper's off CPU.
  std::set<long> corrupted;
  for (const char* name : {"loop", "wild", "bad_code", "lying_code"}) corrupted.insert(threads.at(name).get<long>());
  auto marked = [&](const std::string& metric, const std::string& stack) {
    std::size_t n = 0;
    for (const auto& e : pyebpf.events(metric)) {
      if (!corrupted.count(e.at("container_tid").get<long>()) || e.at(stack + "_depth").get<int>() == 0) continue;
      EXPECT_TRUE(e.value(stack + "_partial", false)) << e.dump();
      ++n;
    }
    return n;
  };
  EXPECT_GT(marked("gil_wait", "waiter_py_stack"), 0u) << "no GIL wait of a corrupted thread with a stack";
  EXPECT_GT(marked("off_cpu", "py_stack"), 0u) << "no off_cpu event of a corrupted thread with a stack";
  for (const auto& e : pyebpf.events("off_cpu")) {
    if (e.at("container_tid").get<long>() == threads.at("healthy").get<long>()) {
      EXPECT_FALSE(e.value("py_stack_partial", false)) << e.dump();
    }
  }

  // The summary counts them: every partial stack, and the loops and faults among them.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      err, m, std::regex(R"(py_stack: .* (\d+) partial \((\d+) memory read faults, (\d+) looping frame chains)")))
      << err;
  EXPECT_EQ(std::stoul(m[1]), partial) << err;
  EXPECT_GT(std::stoul(m[2]), 0u) << err;
  EXPECT_GT(std::stoul(m[3]), 0u) << err;
  // Corrupted objects cost no memory: pyebpf's peak RSS stays near what it needed to attach.
  EXPECT_GT(attached_kb, 0);
  EXPECT_LT(peak_kb.load(), kPeakRssBoundKb) << "VmHWM " << peak_kb.load() << " kB";
  EXPECT_LT(peak_kb.load() - attached_kb, kRssGrowthBoundKb)
      << "VmHWM " << attached_kb << " kB once attached, " << peak_kb.load() << " kB at the end";
}

// Kernels without bpf_loop (< 5.17) walk frames in a bounded loop: the same
// step, verified per iteration. Every tracker that walks stacks must load
// with it, and it must find the same loops and faults.
TEST_P(HostileSelfE2E, BoundedFrameWalkFindsTheSameLoopsAndFaults) {
  Workload workload(GetParam(), "hostile_self.py", {"3"});
  const Json threads = workload.ready().at("threads");
  const std::string file = workload.ready().at("file");
  std::optional<Pyebpf> pyebpf;
  {
    ScopedEnv bounded("PYEBPF_FRAME_WALK", "bounded");
    pyebpf.emplace(std::vector<std::string>{"-p", std::to_string(workload.pid()), "-e", "hostile", "--enable",
                                            "py_stack", "gil", "gc", "offcpu", "--gc-py-enable", "true"});
  }
  pyebpf->wait_ready();
  workload.go();
  workload.result();
  pyebpf->stop();
  const std::string err = pyebpf->stderr_text();
  ASSERT_EQ(pyebpf->exit_status(), 0) << err;
  EXPECT_NE(err.find("Python frame walks use a bounded loop (PYEBPF_FRAME_WALK=bounded)"), std::string::npos) << err;
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  // A tracker whose program the verifier refused would be disabled with a warning, not fail the run.
  EXPECT_FALSE(std::regex_search(err, std::regex("(py_stack|gil|gc|offcpu) disabled"))) << err;

  const auto samples = pyebpf->events("py_stack");
  std::size_t whole = 0;
  const auto healthy = of_tid(samples, threads.at("healthy").get<long>());
  for (const auto& e : healthy) {
    const std::string stack = e.at("stack");
    whole += !e.value("partial", false) && stack.find(";healthy_inner (" + file + ":") != std::string::npos;
  }
  EXPECT_GE(healthy.size(), 10u);
  EXPECT_GE(whole, healthy.size() * 9 / 10) << healthy.front().dump();
  for (const char* name : {"loop", "wild"}) {
    const auto own = of_tid(samples, threads.at(name).get<long>());
    EXPECT_GE(own.size(), 10u) << name;
    for (const auto& e : own) {
      EXPECT_TRUE(e.value("partial", false)) << name << ": " << e.dump();
      EXPECT_FALSE(e.at("truncated").get<bool>()) << name << ": " << e.dump();
    }
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      err, m, std::regex(R"(py_stack: .* partial \((\d+) memory read faults, (\d+) looping frame chains)")))
      << err;
  EXPECT_GT(std::stoul(m[1]), 0u) << err;
  EXPECT_GT(std::stoul(m[2]), 0u) << err;
}

std::vector<PythonBuild> host_pythons_3_11() {
  std::vector<PythonBuild> out;
  for (auto& p : test_pythons(11, 11)) {
    if (p.setup == RootSetUp::Host) out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pythons, HostileElvesE2E, ::testing::ValuesIn(host_pythons_3_11()),
                         [](const auto& info) { return build_test_name(info.param); });

// Frames are _PyInterpreterFrame structs (3.11+): the host's builds, and one
// container-style distro build of the newest layout.
std::vector<PythonBuild> self_corrupting_pythons() {
  std::vector<PythonBuild> out;
  for (auto& p : test_pythons(11, 14)) {
    if (p.setup == RootSetUp::Host || (p.minor == 14 && p.setup == RootSetUp::Container)) out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pythons, HostileSelfE2E, ::testing::ValuesIn(self_corrupting_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
