// SPDX-License-Identifier: Apache-2.0
// py_stack: synthetic BPF samples decoded into events, as the tracker writes
// them to its sink; the CPU section of the report and the CPU flame graph.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "btf_layout.hpp"
#include "py_stack.h"
#include "py_stack.skel.h"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/py_stack/py_stack_events.hpp"

namespace pyebpf::trackers {
namespace {

using Json = nlohmann::ordered_json;

struct PyStackDecoding : ::testing::Test {
  test::DecoderFixture f;
  sinks::CaptureSink sink;
  sinks::Record record{py_stack_schema()};

  void SetUp() override {
    auto& code = f.targets.python(100);
    code.add(0x1000, "<module>", "/srv/app/main.py", 40);
    code.add(0x2000, "handle", "/srv/app/views.py", 10);
    code.add(0x3000, "render", "/srv/app/views.py", 30);
  }
  // Decodes the first `bytes` of `ev` and writes the event, as PyStackTracker does.
  Decoded decode(const pyebpf_py_stack_event& ev, std::size_t bytes) {
    Decoded d = decode_py_stack(&ev, bytes, f.ctx(), record);
    if (d == Decoded::Event) sink.write(record);
    return d;
  }
  static std::size_t bytes_of(const pyebpf_py_stack_event& ev) { return PYEBPF_PY_STACK_EVENT_BYTES(ev.stack.depth); }
};

TEST_F(PyStackDecoding, OneSampleIsOneEventWithTheStackRootFirst) {
  auto ev = std::make_unique<pyebpf_py_stack_event>();
  ev->hdr = test::header(100, 101, 5'000'000'000);
  test::fill_stack(ev->stack, {{0x3000, 2}, {0x2000, 2}, {0x1000, 0}});  // leaf first, as BPF walks
  f.targets.names[{100, ev->hdr.thread_id, 101}] = "Worker-1";
  ASSERT_EQ(decode(*ev, bytes_of(*ev)), Decoded::Event);
  ASSERT_EQ(sink.records.size(), 1u);
  const std::int64_t us = f.clock.epoch_us(5'000'000'000);
  Json expected = {{"metric", "py_stack"},
                   {"env", "test"},
                   {"ts", iso8601_utc(us)},
                   {"ts_us", us},
                   {"pid", 100},
                   {"tid", 101},
                   {"container_pid", 100},
                   {"container_tid", 101},
                   {"comm", "python3"},
                   {"thread_name", "Worker-1"},
                   {"stack",
                    "<module> (/srv/app/main.py:40);handle (/srv/app/views.py:12);"
                    "render (/srv/app/views.py:32)"},
                   {"stack_depth", 3},
                   {"leaf_func", "render"},
                   {"leaf_file", "/srv/app/views.py"},
                   {"leaf_line", 32},
                   {"truncated", false}};
  EXPECT_EQ(sinks::to_json_line(sink.records[0]), expected.dump());
}

TEST_F(PyStackDecoding, FlagsTruncationAndReadFaultsAndTrustsOnlyTheBytesReceived) {
  auto ev = std::make_unique<pyebpf_py_stack_event>();
  ev->hdr = test::header(100, 102);
  test::fill_stack(ev->stack, {{0x3000, 0}, {0x2000, 0}, {0x1000, 0}});
  ev->stack.truncated = 1;
  ev->stack.status = PYEBPF_STACK_READ_FAULT;
  // Only two frames arrived although the depth field says three.
  ASSERT_EQ(decode(*ev, PYEBPF_PY_STACK_EVENT_BYTES(2)), Decoded::Event);
  Json e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["stack"], "handle (/srv/app/views.py:10);render (/srv/app/views.py:30)");
  EXPECT_EQ(e["stack_depth"], 2);
  EXPECT_EQ(e["thread_name"], "python3");  // no threading name: the kernel's
  EXPECT_EQ(e["truncated"], true);
  EXPECT_EQ(e["partial"], true);
}

// What a target that corrupted its own frames or code objects looks like.
TEST_F(PyStackDecoding, LoopingChainsAndUnreadableCodeObjectsArePartial) {
  auto loop = std::make_unique<pyebpf_py_stack_event>();
  loop->hdr = test::header(100, 104);
  test::fill_stack(loop->stack, {{0x3000, 0}, {0x2000, 0}, {0x3000, 0}});
  loop->stack.status = PYEBPF_STACK_FRAME_LOOP;
  ASSERT_EQ(decode(*loop, bytes_of(*loop)), Decoded::Event);
  auto bad_code = std::make_unique<pyebpf_py_stack_event>();
  bad_code->hdr = test::header(100, 105);
  test::fill_stack(bad_code->stack, {{0x3000, 0}, {0xbad0, 0}, {0x1000, 0}});  // 0xbad0: no names to read
  ASSERT_EQ(decode(*bad_code, bytes_of(*bad_code)), Decoded::Event);
  auto whole = std::make_unique<pyebpf_py_stack_event>();
  whole->hdr = test::header(100, 106);
  test::fill_stack(whole->stack, {{0x3000, 0}, {0x2000, 0}});
  ASSERT_EQ(decode(*whole, bytes_of(*whole)), Decoded::Event);

  ASSERT_EQ(sink.records.size(), 3u);
  EXPECT_EQ(test::json_of(sink.records[0])["partial"], true);
  Json e = test::json_of(sink.records[1]);
  EXPECT_EQ(e["stack"], "<module> (/srv/app/main.py:40);<unknown> (<unknown>:0);render (/srv/app/views.py:30)");
  EXPECT_EQ(e["partial"], true);
  EXPECT_FALSE(test::json_of(sink.records[2]).contains("partial"));
}

TEST_F(PyStackDecoding, AThreadWithoutPythonFramesIsStillASample) {
  auto ev = std::make_unique<pyebpf_py_stack_event>();
  ev->hdr = test::header(100, 103);
  ASSERT_EQ(decode(*ev, bytes_of(*ev)), Decoded::Event);
  Json e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["stack"], "");
  EXPECT_EQ(e["leaf_func"], "");
  EXPECT_EQ(e["leaf_line"], 0);
}

TEST_F(PyStackDecoding, ShortRecordsAndForgottenTargetsWriteNothing) {
  auto ev = std::make_unique<pyebpf_py_stack_event>();
  ev->hdr = test::header(100, 101);
  EXPECT_EQ(decode(*ev, PYEBPF_PY_STACK_EVENT_BYTES(0) - 1), Decoded::Malformed);
  ev->hdr.pid = 999;  // not a target (any more)
  EXPECT_EQ(decode(*ev, bytes_of(*ev)), Decoded::Skipped);
  EXPECT_TRUE(sink.records.empty());
}

TEST(PyStackStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = py_stack_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_event_header);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, ts_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, comm);

  EXPECT_SAME_SIZE(t, pyebpf_py_stack);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack, tstate);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack, frames);
  EXPECT_SAME_SIZE(t, pyebpf_py_frame);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_frame, instr);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_frame, tag);

  EXPECT_SAME_SIZE(t, pyebpf_py_proc);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, tss_slot);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, runtime);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, image);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, code_type);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, main_interp);
  EXPECT_SAME_SIZE(t, pyebpf_py_layout);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, frame_window);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, tstate_interp);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, interp_code_generation);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, instr_kind);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, owner_cstack);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, code_tag_len);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, frames_stacked);

  EXPECT_SAME_SIZE(t, pyebpf_py_stack_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack_event, stack);
}

}  // namespace
}  // namespace pyebpf::trackers
