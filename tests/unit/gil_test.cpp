// SPDX-License-Identifier: Apache-2.0
// gil tracker logic that needs no root: per-version BPF configuration from the
// offsets table, hook symbol selection, flag parsing, duration formatting.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "binary/elf_file.hpp"
#include "btf_layout.hpp"
#include "gil.skel.h"
#include "pyebpf/error.hpp"
#include "python/offsets.hpp"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/gil/gil.hpp"
#include "trackers/gil/gil_events.hpp"
#include "util/clock.hpp"

namespace pyebpf {
namespace {

TEST(GilProc, EverySupportedVersionHasItsGilFieldsWhereBpfReadsThem) {
  for (const auto& r : python::OffsetsTable::embedded().rows()) {
    const auto* row = &r;
    const std::string& minor = row->label;
    pyebpf_gil_proc p = trackers::make_gil_proc(*row, 0x1000, PYEBPF_GIL_HOOK_COND_WAIT);
    EXPECT_EQ(p.gil, 0x1000u);
    EXPECT_EQ(p.cond, 0x1000u + row->require("gil.cond")) << minor;
    // The sched hook tells a GIL wait by its futex address: the condition
    // variable's words, or the mutex right after it.
    EXPECT_EQ(p.mutex, 0x1000u + row->require("gil.mutex")) << minor;
    EXPECT_GE(p.mutex, p.cond + PYEBPF_GIL_COND_BYTES) << minor;
    EXPECT_EQ(p.events_sent, 0u);
    for (auto off : {p.locked, p.last_holder, p.switch_number}) EXPECT_LT(off, PYEBPF_GIL_STATE_BYTES) << minor;
    EXPECT_EQ(p.last_holder % 8, 0) << minor;
    EXPECT_EQ(p.hook, PYEBPF_GIL_HOOK_COND_WAIT);
    // 3.12 moved the GIL under the interpreter (gh-104812): only there does
    // BPF check which interpreter a waiter belongs to.
    bool per_interpreter = row->python.minor >= 12;
    EXPECT_EQ(p.tstate_interp != PYEBPF_NO_OFFSET, per_interpreter) << minor;
    EXPECT_EQ(p.interp_ceval_gil != PYEBPF_NO_OFFSET, per_interpreter) << minor;
  }
}

TEST(GilProc, RowWithoutGilFieldsIsRejectedNamingTheField) {
  python::OffsetsRow row;
  row.minor = "3.99";
  row.fields["gil.cond"] = 32;
  row.fields["gil.mutex"] = 80;
  row.fields["gil.last_holder"] = 8;
  row.fields["gil.switch_number"] = 24;
  row.fields["runtime.gil"] = 0;
  try {
    trackers::make_gil_proc(row, 0, PYEBPF_GIL_HOOK_TAKE_GIL);
    FAIL() << "accepted a row without gil.locked";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gil.locked"), std::string::npos) << e.what();
  }
  row.fields["gil.locked"] = 40;  // beyond what BPF reads in one go
  EXPECT_THROW(trackers::make_gil_proc(row, 0, PYEBPF_GIL_HOOK_TAKE_GIL), Error);
}

// glibc defines pthread_cond_timedwait twice: the default @@GLIBC_2.3.2 and a
// compatibility @GLIBC_2.2.5 (the pre-2.3.2 condvar). Probing the wrong one
// would silently see nothing: the symbol must be the one the dynamic linker
// binds new programs to, i.e. what dlsym returns.
TEST(ElfVersions, DefaultVersionOfAVersionedSymbolWins) {
  void* addr = dlsym(RTLD_DEFAULT, "pthread_cond_timedwait");
  ASSERT_NE(addr, nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(addr, &info), 0);
  auto elf = binary::ElfFile::open(info.dli_fname);
  auto sym = elf.symbol("pthread_cond_timedwait");
  ASSERT_TRUE(sym);
  std::uint64_t bias = elf.is_shared_object() ? reinterpret_cast<std::uint64_t>(info.dli_fbase) : 0;
  EXPECT_EQ(sym->value + bias, reinterpret_cast<std::uint64_t>(addr)) << info.dli_fname;
}

std::optional<trackers::GilOptions> parse(std::vector<std::string> args) {
  auto o = test::parse_args(std::move(args));
  if (!o) return std::nullopt;
  return test::tracker_options<trackers::GilOptions>(*o, "gil");
}

// --gil-min-wait-ms: 5 ms, not the original tool's 1 ms (docs/trackers/gil.md:
// every wait is in gil_stats; events only for waits of a switch interval or more).
TEST(GilFlags, Defaults) {
  auto o = parse({});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->min_wait_ms, 5.0);
  EXPECT_EQ(o->stats_interval_s, 10.0);
  EXPECT_TRUE(o->py_enable);
  EXPECT_EQ(o->py_min_ms, 0.0);
  EXPECT_EQ(o->hook, "auto");
}

TEST(GilFlags, PyEnableTakesAValueOrANegation) {
  EXPECT_FALSE(parse({"--gil-py-enable", "false"})->py_enable);
  EXPECT_FALSE(parse({"--gil-py-enable=false"})->py_enable);
  EXPECT_FALSE(parse({"--no-gil-py-enable"})->py_enable);
  EXPECT_TRUE(parse({"--gil-py-enable"})->py_enable);
  EXPECT_TRUE(parse({"--gil-py-enable", "true", "--gil-min-wait-ms", "3"})->py_enable);
  auto o = parse({"--gil-py-enable", "--gil-min-wait-ms", "2.5", "--gil-py-min-ms", "4"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->min_wait_ms, 2.5);
  EXPECT_EQ(o->py_min_ms, 4.0);
}

TEST(GilFlags, BadValuesAreUsageErrors) {
  EXPECT_FALSE(parse({"--gil-hook", "futex"}));
  EXPECT_FALSE(parse({"--gil-min-wait-ms", "-1"}));
  EXPECT_FALSE(parse({"--gil-stats-interval", "0"}));
  EXPECT_FALSE(parse({"--gil-py-enable", "maybe"}));
  EXPECT_EQ(parse({"--gil-hook", "take_gil"})->hook, "take_gil");
}

TEST(Units, DurationsPrintInMillisecondsRoundedToMicroseconds) {
  EXPECT_EQ(ns_to_ms(0), 0.0);
  EXPECT_EQ(ns_to_ms(1'000'000), 1.0);
  EXPECT_EQ(ns_to_ms(5'123'499), 5.123);
  EXPECT_EQ(ns_to_ms(5'123'500), 5.124);
}

// --- decoding ----------------------------------------------------------------

TEST(GilDecoding, AWaitWithBothStacksAndTheHolderNamed) {
  test::DecoderFixture f;
  auto& code = f.targets.python(300);
  code.add(0x10, "run", "/srv/w.py", 1);
  code.add(0x20, "io", "/srv/w.py", 5);
  code.add(0x30, "crunch", "/srv/h.py", 22);
  // The holder's tid was unknown to BPF; the thread map knows it by now.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> asked;
  trackers::GilDecoder decoder([&](std::uint32_t pid, std::uint64_t thread_id) -> std::optional<pyebpf_gil_thread> {
    asked.emplace_back(pid, thread_id);
    return pyebpf_gil_thread{305, 5};
  });
  auto ev = std::make_unique<pyebpf_gil_event>();
  ev->hdr = test::header(300, 301);
  ev->duration_ns = 5'123'500;
  ev->holder_thread_id = 0xabc;
  ev->holder_changes = 2;
  test::fill_stack(ev->waiter_stack, {{0x20, 0}, {0x10, 0}});
  test::fill_stack(ev->holder_stack, {{0x30, 0}});
  f.targets.names[{300, 0xabc, 5}] = "CpuHog";
  sinks::CaptureSink sink;
  sinks::Record record(trackers::gil_wait_schema());
  ASSERT_EQ(decoder.decode(ev.get(), PYEBPF_GIL_EVENT_BYTES(1), f.ctx(), record), trackers::Decoded::Event);
  sink.write(record);
  EXPECT_EQ(asked, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{300, 0xabc}}));
  EXPECT_EQ(decoder.holders_resolved_late(), 1u);
  auto e = test::json_of(sink.records[0]);
  EXPECT_EQ(test::keys_of(sink.records[0]),
            (std::vector<std::string>{"metric", "env", "ts", "ts_us", "pid", "tid", "container_pid", "container_tid",
                                      "comm", "thread_name", "duration_ms", "holder_tid", "holder_container_tid",
                                      "holder_thread_name", "waiter_py_stack", "waiter_py_stack_depth",
                                      "holder_py_stack", "holder_py_stack_depth", "holder_changes"}));
  EXPECT_EQ(e["duration_ms"], 5.124);
  EXPECT_EQ(e["holder_tid"], 305);
  EXPECT_EQ(e["holder_container_tid"], 5);
  EXPECT_EQ(e["holder_thread_name"], "CpuHog");
  EXPECT_EQ(e["waiter_py_stack"], "run (/srv/w.py:1);io (/srv/w.py:5)");
  EXPECT_EQ(e["holder_py_stack"], "crunch (/srv/h.py:22)");
  EXPECT_EQ(e["holder_changes"], 2);

  // A stack whose walk stopped at a looping frame chain is marked partial, on its own side only.
  ev->waiter_stack.status = PYEBPF_STACK_FRAME_LOOP;
  ASSERT_EQ(decoder.decode(ev.get(), PYEBPF_GIL_EVENT_BYTES(1), f.ctx(), record), trackers::Decoded::Event);
  EXPECT_EQ(test::json_of(record)["waiter_py_stack_partial"], true);
  EXPECT_FALSE(test::json_of(record).contains("holder_py_stack_partial"));
  ev->waiter_stack.status = PYEBPF_STACK_OK;
  ev->holder_stack.status = PYEBPF_STACK_READ_FAULT;
  ASSERT_EQ(decoder.decode(ev.get(), PYEBPF_GIL_EVENT_BYTES(1), f.ctx(), record), trackers::Decoded::Event);
  EXPECT_FALSE(test::json_of(record).contains("waiter_py_stack_partial"));
  EXPECT_EQ(test::json_of(record)["holder_py_stack_partial"], true);

  // Malformed and forgotten: nothing.
  EXPECT_EQ(decoder.decode(ev.get(), PYEBPF_GIL_EVENT_BYTES(0) - 1, f.ctx(), record), trackers::Decoded::Malformed);
  ev->hdr.pid = 999;
  EXPECT_EQ(decoder.decode(ev.get(), PYEBPF_GIL_EVENT_BYTES(1), f.ctx(), record), trackers::Decoded::Skipped);
}

TEST(GilStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = gil_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_gil_proc);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, cond);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, locked);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, last_holder);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, switch_number);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, interp_ceval_gil);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, hook);
  EXPECT_SAME_SIZE(t, pyebpf_gil_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, duration_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_changes);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, hook);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, waiter_stack);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_stack);
  EXPECT_SAME_SIZE(t, pyebpf_gil_thread_key);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_thread_key, thread_id);
  EXPECT_SAME_SIZE(t, pyebpf_gil_thread);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_thread, ns_tid);
  EXPECT_SAME_SIZE(t, pyebpf_gil_stats_key);
  EXPECT_SAME_SIZE(t, pyebpf_gil_stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_stats, reported);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_stats, waits);
}

}  // namespace
}  // namespace pyebpf
