// SPDX-License-Identifier: Apache-2.0
// Degrade, don't die: a tracker that cannot trace one target, a tracker that
// cannot start, a PID that is no CPython process: each is a warning naming
// tracker, PID and reason, repeated in the end-of-run summary, and the rest
// of the run goes on. The run fails only when nothing can run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "binary/elf_file.hpp"
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
  // gc_stats counts every collection (gc_pause only those >= --gc-min-ms).
  EXPECT_TRUE(has_events_of(pyebpf, "gc_stats", stripped.pid())) << err;
  EXPECT_FALSE(has_events_of(pyebpf, "gc_stats", symtab.pid()));
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

// A copy of sid's python3.13 that is another build as far as the offsets
// table can tell: another build-id, and Py_Version saying 3.13.5. Its nearest
// row is then pyenv's 3.13.0, whose GC state layout is not Debian's (the
// generations sit 4 bytes lower there): what the issue found pyebpf doing
// with Debian's 3.13.18 before rows were per build.
PythonBuild sid_313_posing_as_3135() {
  PythonBuild build;
  for (const auto& b : test_pythons(13, 13)) {
    if (b.setup == RootSetUp::Chroot) build = b;
  }
  if (build.root.empty()) throw std::runtime_error("no sid python3.13 (tools/install-sid-root)");
  const std::string copy = "/tmp/pyebpf-python3.13-as-3.13.5";
  namespace fs = std::filesystem;
  fs::copy_file(build.host_path(), build.root + copy, fs::copy_options::overwrite_existing);
  auto elf = binary::ElfFile::open(build.root + copy);
  auto py_version = elf.symbol("Py_Version");
  if (!py_version || elf.build_id().size() != 40) throw std::runtime_error("unexpected python3.13 build");
  std::fstream file(build.root + copy, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::string id;
  for (std::size_t i = 0; i < 40; i += 2) id += static_cast<char>(std::stoi(elf.build_id().substr(i, 2), nullptr, 16));
  auto at = bytes.find(id);
  if (at == std::string::npos) throw std::runtime_error("build-id not found in " + copy);
  file.seekp(static_cast<std::streamoff>(at));
  file.write("\x00\x11\x22\x33", 4);
  const std::uint32_t hex = 0x030d05f0;  // 3.13.5 final
  file.seekp(static_cast<std::streamoff>(*elf.file_offset(py_version->value)));
  file.write(reinterpret_cast<const char*>(&hex), 4);
  build.label = "sid-3.13-as-3.13.5";
  build.path = copy;
  return build;
}

TEST(DegradeE2E, RowOfAnotherBuildThatDoesNotFitDisablesOnlyWhatNeedsIt) {
  Workload target(sid_313_posing_as_3135(), "gc_pauses.py", {"1", "1000", "1"});
  Pyebpf pyebpf({"-p", std::to_string(target.pid()), "-e", "e2e", "--enable", "py_stack", "gc"});
  run({&target}, pyebpf);
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  EXPECT_NE(err.find("CPython 3.13.5 (Py_Version symbol)"), std::string::npos) << err;
  EXPECT_NE(err.find("offsets row pyenv-3.13.0 for the rest"), std::string::npos) << err;
  // The walker's fields come from the target's _Py_DebugOffsets: stacks are right.
  std::size_t in_workload = 0;
  for (const auto& e : pyebpf.events("py_stack"))
    in_workload += e.at("stack").get<std::string>().find("/gc_pauses.py:") != std::string::npos;
  EXPECT_GT(in_workload, 20u) << err;
  // The GC state's are not: checked, found wrong, gc disabled naming the field.
  EXPECT_EQ(count(err, "gc disabled: gc: pid " + std::to_string(target.pid()) + " (CPython 3.13.5, " +
                           "/tmp/pyebpf-python3.13-as-3.13.5): gc.generation0 at "),
            2u)
      << err;
  EXPECT_TRUE(pyebpf.events("gc_pause").empty());
  EXPECT_TRUE(pyebpf.events("gc_stats").empty());
}

// A target whose C library pyebpf cannot read symbols from (a container's
// damaged or replaced file): the C library probes of handoff and tcp_accept
// cannot go in it. Each reports that target disabled, as gc and gil do, and
// goes on with the other target; the other trackers trace both.
TEST(DegradeE2E, TargetWhoseCLibraryHasNoSymbolsDisablesOnlyItsLibcProbes) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::copy_file("/lib/x86_64-linux-gnu/libc.so.6", dir / "libc.so.6");
  Workload broken(with_symtab(), "cpu_shares.py", {"1"}, {"env", "LD_LIBRARY_PATH=" + (dir / "")});
  Workload healthy(with_symtab(), "cpu_shares.py", {"1"});
  {
    // Running code never reads the section headers: point them past the end.
    std::fstream file(dir / "libc.so.6", std::ios::in | std::ios::out | std::ios::binary);
    const std::uint64_t past_end = 0xfffffff0;
    file.seekp(0x28);  // e_shoff in an ELF64 header
    file.write(reinterpret_cast<const char*>(&past_end), sizeof(past_end));
  }
  Pyebpf pyebpf({"-p", std::to_string(broken.pid()), "-p", std::to_string(healthy.pid()), "-e", "e2e", "--enable",
                 "py_stack", "handoff", "tcp_accept"});
  run({&broken, &healthy}, pyebpf);
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string err = pyebpf.stderr_text();
  for (const std::string tracker : {"handoff", "tcp_accept"}) {
    EXPECT_EQ(count(err, tracker + " disabled for pid " + std::to_string(broken.pid()) + ": CPython "), 2u)
        << "a warning at start, a line in the summary:\n"
        << err;
  }
  EXPECT_EQ(count(err, "maps no C library function accept4"), 4u) << err;
  EXPECT_EQ(err.find("disabled for pid " + std::to_string(healthy.pid())), std::string::npos) << err;
  EXPECT_NE(err.find("handoff: pid " + std::to_string(healthy.pid()) + ": "), std::string::npos)
      << "its probes went in:\n"
      << err;
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", broken.pid())) << err;
  EXPECT_TRUE(has_events_of(pyebpf, "py_stack", healthy.pid())) << err;
}

}  // namespace
}  // namespace pyebpf::e2e
