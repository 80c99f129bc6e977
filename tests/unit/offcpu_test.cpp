// SPDX-License-Identifier: Apache-2.0
// offcpu pure logic: kallsyms parsing, task state letters, native stack order
// and symbolisation against real ELF files (struct layouts: bpf_structs_test).
// No root needed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "btf_layout.hpp"
#include "native/kallsyms.hpp"
#include "native/symbolizer.hpp"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "procfs/maps.hpp"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/offcpu/offcpu_events.hpp"

// A function with a known name and no other function right after it: aligned
// to 64 bytes and only a few bytes long, so the bytes after it are padding
// that no symbol covers.
extern "C" __attribute__((noinline, aligned(64), used)) int pyebpf_offcpu_test_marker(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}

namespace pyebpf {
namespace {

using native::Kallsyms;
using trackers::format_prev_state;
using trackers::root_first_stack;

constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81002000 t do_nanosleep\n"
    "ffffffff81001000 T schedule\n"
    "ffffffff81001800 d some_data\n"  // data: ignored
    "ffffffff81003000 W weak_text\n"
    "ffffffffc0a01000 t nft_do_chain\t[nf_tables]\n"
    "ffffffffc0a02000 t bpf_prog_6deef7357e7b4530_offcpu_switch_btf\t[bpf]\n"
    "garbage line\n"
    "ffffffff8100zz00 T bad_address\n";

TEST(Kallsyms, ParsesTextSymbolsSortedWithModules) {
  Kallsyms k = Kallsyms::parse(kKallsyms);
  EXPECT_EQ(k.size(), 6u);
  EXPECT_FALSE(k.zero_addresses());
  ASSERT_TRUE(k.lookup(0xffffffff81001234));
  EXPECT_EQ(k.lookup(0xffffffff81001234)->name, "schedule");
  EXPECT_EQ(k.lookup(0xffffffff81001000)->name, "schedule");  // exact start
  EXPECT_EQ(k.lookup(0xffffffff81002fff)->name, "do_nanosleep");
  EXPECT_EQ(k.lookup(0xffffffff81003010)->name, "weak_text");
  auto mod = k.lookup(0xffffffffc0a01010);
  ASSERT_TRUE(mod);
  EXPECT_EQ(mod->name, "nft_do_chain");
  EXPECT_EQ(mod->module, "nf_tables");
}

TEST(Kallsyms, NamesFramesAndMarksWhatItCannotResolve) {
  Kallsyms k = Kallsyms::parse(kKallsyms);
  EXPECT_EQ(k.name(0xffffffff81001100), "schedule");
  EXPECT_EQ(k.name(0xffffffffc0a01010), "nft_do_chain [nf_tables]");
  EXPECT_EQ(k.name(0xffffffff80000000), "[unknown] [0xffffffff80000000]");  // below every symbol
  EXPECT_EQ(k.name(0xffffffffc0f00000), "[unknown] [0xffffffffc0f00000]");  // far past the last one
}

TEST(Kallsyms, ZeroAddressesMeanHiddenNotResolvable) {
  Kallsyms k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t schedule\n");
  EXPECT_TRUE(k.zero_addresses());
  EXPECT_EQ(k.size(), 0u);
  EXPECT_FALSE(k.lookup(0x1000));
  EXPECT_EQ(Kallsyms::load("/nonexistent/kallsyms").size(), 0u);
}

TEST(Kallsyms, LoadReadsTheFileLineByLine) {
  const auto path = std::filesystem::temp_directory_path() / ("pyebpf-kallsyms-" + std::to_string(getpid()));
  std::ofstream(path) << kKallsyms;
  Kallsyms k = Kallsyms::load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(k.name(0xffffffff81002010), "do_nanosleep");
  EXPECT_EQ(k.name(0xffffffffc0a01000), "nft_do_chain [nf_tables]");
  EXPECT_EQ(k.size(), Kallsyms::parse(kKallsyms).size());  // data symbols dropped alike
}

TEST(Kallsyms, LoadKeepsLinesSplitAcrossReads) {
  // ~1.3 MB: several of load()'s read pieces, so lines straddle their ends;
  // the last line has no newline.
  std::string text;
  constexpr int kSymbols = 30000;
  for (int i = 0; i < kSymbols; ++i)
    text += fmt::format("{:016x} t function_with_a_long_name_{}{}\n", 0xffffffff81000000 + i * 0x100, i,
                        i % 7 ? "" : "\t[some_module]");
  text += "ffffffff8f000000 T last_without_newline";
  const auto path = std::filesystem::temp_directory_path() / ("pyebpf-kallsyms-big-" + std::to_string(getpid()));
  std::ofstream(path) << text;
  Kallsyms k = Kallsyms::load(path);
  std::filesystem::remove(path);
  ASSERT_EQ(k.size(), kSymbols + 1u);
  for (int i : {0, 1, 8191, 8192, 12345, kSymbols - 1})
    EXPECT_EQ(k.name(0xffffffff81000000 + i * 0x100 + 4),
              fmt::format("function_with_a_long_name_{}{}", i, i % 7 ? "" : " [some_module]"));
  EXPECT_EQ(k.name(0xffffffff8f000010), "last_without_newline");
}

TEST(PrevState, LettersLikePs) {
  EXPECT_EQ(format_prev_state(0x0000), "R");
  EXPECT_EQ(format_prev_state(0x0001), "S");
  EXPECT_EQ(format_prev_state(0x2001), "S");  // TASK_INTERRUPTIBLE | TASK_FREEZABLE
  EXPECT_EQ(format_prev_state(0x0002), "D");
  EXPECT_EQ(format_prev_state(0x0102), "D");  // TASK_KILLABLE
  EXPECT_EQ(format_prev_state(0x0402), "I");  // TASK_IDLE
  EXPECT_EQ(format_prev_state(0x0004), "T");
  EXPECT_EQ(format_prev_state(0x0008), "t");
  EXPECT_EQ(format_prev_state(0x0040), "P");
  EXPECT_EQ(format_prev_state(0x1000), "D");  // PREEMPT_RT sleeping lock
  EXPECT_EQ(format_prev_state(0x0003), "SD");
  EXPECT_EQ(format_prev_state(0x0200), "?(0x200)");  // TASK_WAKING alone: no letter
}

pyebpf_offcpu_native_stack make_stack(std::vector<std::uint64_t> leaf_first) {
  pyebpf_offcpu_native_stack st{};
  st.depth = static_cast<std::uint32_t>(leaf_first.size());
  for (std::size_t i = 0; i < leaf_first.size(); ++i) st.ips[i] = leaf_first[i];
  return st;
}

// Frame names as text, for comparisons.
std::vector<std::string> texts(const std::vector<stack::NativeFrame>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(stack::text_of(f));
  return out;
}

stack::NativeFrame symbol(std::string_view name, std::string_view module = {}) {
  return {stack::NativeFrame::Kind::Symbol, name, module};
}

TEST(NativeStack, RootFirstWithTracingFramesDroppedAndTruncationMarked) {
  // Leaf first as the kernel unwinds: the BPF program, bpf_trace_run4, then the thread's own path.
  auto st = make_stack({1, 2, 10, 11, 12, 13});
  std::vector<std::pair<std::uint64_t, bool>> calls;
  std::vector<std::string> names(20);
  for (int i = 10; i < 20; ++i) names[i] = "f" + std::to_string(i);
  auto frame = [&](std::uint64_t addr, bool ret) {
    calls.emplace_back(addr, ret);
    switch (addr) {
      case 1:
        return symbol("bpf_prog_1234_offcpu_switch_btf", "bpf");
      case 2:
        return symbol("bpf_trace_run4");
      default:
        return symbol(names[addr]);
    }
  };
  std::vector<stack::NativeFrame> out;
  root_first_stack(st, 20, frame, trackers::is_tracing_frame, out);
  EXPECT_EQ(texts(out), (std::vector<std::string>{"f13", "f12", "f11", "f10"}));
  // Only the leaf is a current instruction; every other frame is a return address.
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_FALSE(calls[0].second);
  for (std::size_t i = 1; i < calls.size(); ++i) EXPECT_TRUE(calls[i].second);

  root_first_stack(st, 2, frame, trackers::is_tracing_frame, out);
  EXPECT_EQ(texts(out), (std::vector<std::string>{"[truncated]", "f11", "f10"}));
  root_first_stack(st, 4, frame, trackers::is_tracing_frame, out);
  EXPECT_EQ(stack::text_of(out.front()), "f13") << "exactly the limit is not a cut";
  // User stacks keep every frame: nothing there is ours.
  names[5] = "f5";
  names[6] = "f6";
  root_first_stack(make_stack({5, 6}), 20, frame, {}, out);
  EXPECT_EQ(texts(out), (std::vector<std::string>{"f6", "f5"}));
  root_first_stack(make_stack({}), 20, frame, {}, out);
  EXPECT_TRUE(out.empty());
}

TEST(NativeStack, TracingFrames) {
  for (const char* f : {"bpf_trace_run4", "__bpf_trace_sched_switch", "__traceiter_sched_switch",
                        "bpf_prog_e6516c1e5e599cdf_offcpu_switch_btf [bpf]", "perf_trace_run_bpf_submit"})
    EXPECT_TRUE(trackers::is_tracing_frame(stack::parse_native_frame(f))) << f;
  for (const char* f : {"__schedule", "schedule", "do_nanosleep", "futex_wait", "nft_do_chain [nf_tables]",
                        "[unknown] [0xffffffffc0f00000]"})
    EXPECT_FALSE(trackers::is_tracing_frame(stack::parse_native_frame(f))) << f;
}

std::string self_exe_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string path(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  return path.substr(path.rfind('/') + 1);
}

TEST(ElfSymbols, FunctionAtCoversExactlyTheSymbolRange) {
  binary::ElfFile elf = binary::ElfFile::open("/proc/self/exe");
  auto sym = elf.symbol("pyebpf_offcpu_test_marker");
  ASSERT_TRUE(sym.has_value());
  ASSERT_GT(sym->size, 0u);
  ASSERT_NE(elf.function_at(sym->value), nullptr);
  EXPECT_EQ(elf.function_at(sym->value)->name, "pyebpf_offcpu_test_marker");
  EXPECT_EQ(elf.function_at(sym->value + sym->size - 1)->name, "pyebpf_offcpu_test_marker");
  const auto* after = elf.function_at(sym->value + sym->size);
  EXPECT_TRUE(after == nullptr || after->name != "pyebpf_offcpu_test_marker");
  // File offset and virtual address are inverse mappings over PT_LOAD segments.
  auto off = elf.file_offset(sym->value);
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(elf.vaddr_of_offset(*off), sym->value);
}

TEST(NativeSymbolizer, NamesFunctionsOfThisProcessWithTheirModule) {
  native::ElfCache files;
  native::NativeSymbolizer sym(getpid(), files);
  auto addr = reinterpret_cast<std::uint64_t>(&pyebpf_offcpu_test_marker);
  std::string module = self_exe_name();
  EXPECT_EQ(sym.name(addr, false), "pyebpf_offcpu_test_marker [" + module + "]");
  EXPECT_EQ(sym.name(addr + 2, false), "pyebpf_offcpu_test_marker [" + module + "]");
  // A return address right after the function's last byte still names the
  // function whose call it follows.
  binary::ElfFile elf = binary::ElfFile::open("/proc/self/exe");
  auto info = elf.symbol("pyebpf_offcpu_test_marker");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(sym.name(addr + info->size, true), "pyebpf_offcpu_test_marker [" + module + "]");
  // A shared library function, through its own mapping.
  auto getpid_addr = reinterpret_cast<std::uint64_t>(&::getpid);
  EXPECT_EQ(sym.name(getpid_addr, false).rfind("getpid [libc.so", 0), 0u) << sym.name(getpid_addr, false);
  EXPECT_GT(sym.resolved(), 0u);
}

TEST(NativeSymbolizer, MarksWhatItCannotResolve) {
  native::ElfCache files;
  native::NativeSymbolizer sym(getpid(), files);
  // Heap memory: no file mapping at all.
  std::vector<char> heap(64);
  auto heap_addr = reinterpret_cast<std::uint64_t>(heap.data());
  EXPECT_EQ(sym.name(heap_addr, false), stack::text_of({stack::NativeFrame::Kind::Address, {}, {}, heap_addr}));
  EXPECT_EQ(sym.name(heap_addr, false).rfind("[unknown] [0x", 0), 0u);
  // Padding after the marker function: in our executable mapping, covered by no symbol.
  binary::ElfFile elf = binary::ElfFile::open("/proc/self/exe");
  auto info = elf.symbol("pyebpf_offcpu_test_marker");
  ASSERT_TRUE(info.has_value());
  auto addr = reinterpret_cast<std::uint64_t>(&pyebpf_offcpu_test_marker) + info->size;
  if (elf.function_at(info->value + info->size) != nullptr) GTEST_SKIP() << "no padding after the marker";
  std::string name = sym.name(addr, false);
  EXPECT_EQ(name.rfind("[unknown] [" + self_exe_name() + "+0x", 0), 0u) << name;
  EXPECT_GT(sym.unresolved(), 0u);
}

// --- decoding ----------------------------------------------------------------

// `ev` as offcpu.bpf.c's pack_event() sends it (offcpu.h, "On the wire").
std::vector<unsigned char> wire(const pyebpf_offcpu_event& ev) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&ev);
  std::vector<unsigned char> out(bytes, bytes + PYEBPF_OFFCPU_FIXED_BYTES);
  for (const pyebpf_offcpu_native_stack* st : {&ev.kstack, &ev.ustack}) {
    const auto* b = reinterpret_cast<const unsigned char*>(st);
    out.insert(out.end(), b, b + PYEBPF_OFFCPU_NATIVE_BYTES(st->depth));
  }
  const auto* py = reinterpret_cast<const unsigned char*>(&ev.py);
  out.insert(out.end(), py, py + PYEBPF_STACK_BYTES(ev.py.depth));
  return out;
}

TEST(OffCpuDecoding, UnpacksWhatTheRingCarries) {
  auto ev = std::make_unique<pyebpf_offcpu_event>();
  ev->off_ns = 42;
  ev->kstack = make_stack({0xffffffff81001010, 0xffffffff81002020, 0xffffffff81003030});
  ev->ustack = make_stack({0x401000});
  test::fill_stack(ev->py, {{0x40, 0}, {0x80, 2}});
  auto w = wire(*ev);
  EXPECT_EQ(w.size(), PYEBPF_OFFCPU_MIN_WIRE_BYTES + 8 * 4 + 2 * sizeof(pyebpf_py_frame));
  auto out = std::make_unique<pyebpf_offcpu_event>();
  auto py_bytes = trackers::unpack_offcpu_event(w.data(), w.size(), *out);
  ASSERT_TRUE(py_bytes);
  EXPECT_EQ(*py_bytes, PYEBPF_STACK_BYTES(2));
  EXPECT_EQ(out->off_ns, 42u);
  ASSERT_EQ(out->kstack.depth, 3u);
  EXPECT_EQ(out->kstack.ips[2], 0xffffffff81003030);
  ASSERT_EQ(out->ustack.depth, 1u);
  EXPECT_EQ(out->ustack.ips[0], 0x401000u);
  ASSERT_EQ(out->py.depth, 2u);
  EXPECT_EQ(out->py.frames[1].code, 0x80u);
  // Cut anywhere before the Python stack's header ends: malformed, never read past the end.
  for (std::size_t cut = 0; cut < w.size() - 2 * sizeof(pyebpf_py_frame); ++cut)
    EXPECT_FALSE(trackers::unpack_offcpu_event(w.data(), cut, *out)) << cut;
  // A depth past the slots (or past the bytes sent) is malformed too.
  ev->ustack.depth = PYEBPF_OFFCPU_NATIVE_SLOTS + 1;
  w = wire(*ev);
  EXPECT_FALSE(trackers::unpack_offcpu_event(w.data(), w.size(), *out));
}

TEST(OffCpuDecoding, ASleepWithKernelUserAndPythonStacks) {
  test::DecoderFixture f;
  const auto pid = static_cast<std::uint32_t>(getpid());  // user frames are named from this process's own maps
  f.targets.python(static_cast<pid_t>(pid)).add(0x40, "wait_for_lock", "/srv/a.py", 9);
  Kallsyms kallsyms = Kallsyms::parse(kKallsyms);
  trackers::OffCpuDecoder decoder(20, [&]() -> const Kallsyms& { return kallsyms; });
  auto ev = std::make_unique<pyebpf_offcpu_event>();
  ev->hdr = test::header(pid, pid + 1);
  ev->off_ns = 119'854'400;
  ev->runq_ns = 6'871'600;
  ev->prev_state = 1;  // TASK_INTERRUPTIBLE
  // Kernel stack leaf first: the BPF program (dropped), then the thread's own path.
  ev->kstack = make_stack({0xffffffffc0a02010, 0xffffffff81001010, 0xffffffff81002020});
  ev->ustack = make_stack({reinterpret_cast<std::uint64_t>(&pyebpf_offcpu_test_marker) + 2});
  test::fill_stack(ev->py, {{0x40, 0}});
  sinks::CaptureSink sink;
  sinks::Record record(trackers::off_cpu_schema());
  auto w = wire(*ev);
  ASSERT_EQ(decoder.decode(w.data(), w.size(), f.ctx(), record), trackers::Decoded::Event);
  sink.write(record);
  EXPECT_EQ(test::keys_of(sink.records[0]),
            (std::vector<std::string>{"metric", "env", "ts", "ts_us", "pid", "tid", "container_pid", "container_tid",
                                      "comm", "thread_name", "off_cpu_ms", "runq_ms", "prev_state", "cpu",
                                      "kernel_stack", "user_stack", "py_stack", "py_stack_depth"}));
  auto e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["off_cpu_ms"], 119.854);
  EXPECT_EQ(e["runq_ms"], 6.872);
  EXPECT_EQ(e["prev_state"], "S");
  EXPECT_EQ(e["cpu"], 1);
  EXPECT_EQ(e["kernel_stack"], nlohmann::ordered_json({"do_nanosleep", "schedule"}));
  EXPECT_EQ(e["user_stack"], nlohmann::ordered_json({"pyebpf_offcpu_test_marker [" + self_exe_name() + "]"}));
  EXPECT_EQ(e["py_stack"], "wait_for_lock (/srv/a.py:9)");
  EXPECT_EQ(e["py_stack_depth"], 1);

  // A walk cut by a memory read fault: the frames it got, marked partial.
  ev->py.status = PYEBPF_STACK_READ_FAULT;
  w = wire(*ev);
  ASSERT_EQ(decoder.decode(w.data(), w.size(), f.ctx(), record), trackers::Decoded::Event);
  EXPECT_EQ(test::json_of(record)["py_stack"], "wait_for_lock (/srv/a.py:9)");
  EXPECT_EQ(test::json_of(record)["py_stack_partial"], true);

  // Python stacks not walked (below --offcpu-py-min-ms): empty, not absent.
  ev->py.status = PYEBPF_STACK_NOT_WALKED;
  w = wire(*ev);
  ASSERT_EQ(decoder.decode(w.data(), w.size(), f.ctx(), record), trackers::Decoded::Event);
  EXPECT_EQ(test::json_of(record)["py_stack"], "");
  EXPECT_EQ(test::json_of(record)["py_stack_depth"], 0);
  EXPECT_EQ(decoder.decode(w.data(), PYEBPF_OFFCPU_MIN_WIRE_BYTES - 1, f.ctx(), record), trackers::Decoded::Malformed);
}

TEST(OffCpuStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = offcpu_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_offcpu_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, runq_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, prev_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, kstack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, ustack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, py);
  EXPECT_SAME_SIZE(t, pyebpf_offcpu_native_stack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_native_stack, depth);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_native_stack, ips);
  EXPECT_SAME_SIZE(t, pyebpf_offcpu_thread);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, phase);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, prev_state);

  EXPECT_SAME_SIZE(t, pyebpf_offcpu_agg_key);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, gen);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, prev_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, kstack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, pystack);
  EXPECT_SAME_SIZE(t, pyebpf_offcpu_agg_value);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, count);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, max_off_ns);
  EXPECT_SAME_SIZE(t, pyebpf_offcpu_stack_key);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_stack_key, hash);
}

}  // namespace
}  // namespace pyebpf
