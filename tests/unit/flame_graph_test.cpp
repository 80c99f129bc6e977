// Folded stacks and speedscope output: format, weights per kind, file names.
#include "sinks/flame_graph_sink.hpp"

#include <gtest/gtest.h>

#include "flame_graph_support.hpp"
#include "sinks/report_text.hpp"
#include "trackers/offcpu/offcpu_events.hpp"

namespace pyebpf::sinks {
namespace {

using namespace test_flame;

FedSink make() {
  return FedSink();
}

TEST(FlameGraph, KindsComeFromTheTrackersCpuFirst) {
  auto kinds = app::flame_graph_kinds(test::parse_args({})->trackers);
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[kCpu].name, "CPU");
  EXPECT_EQ(kinds[kCpu].file_suffix, "");
  EXPECT_DOUBLE_EQ(kinds[kCpu].speedscope_ms, 1000.0 / 99);
  EXPECT_EQ(kinds[kGil].name, "GIL wait");
  EXPECT_EQ(kinds[kOffCpu].name, "off-CPU");
  EXPECT_EQ(kinds[kOffCpu].file_suffix, "off_cpu");
}

TEST(FlameGraph, DerivedFileNames) {
  EXPECT_EQ(FlameGraphSink::derived_path("out/prof.folded", "off_cpu"), "out/prof.off_cpu.folded");
  EXPECT_EQ(FlameGraphSink::derived_path("out/prof", "gil_wait"), "out/prof.gil_wait");
  EXPECT_EQ(FlameGraphSink::derived_path("out.d/prof", "gil_wait"), "out.d/prof.gil_wait");
  EXPECT_EQ(FlameGraphSink::derived_path(".hidden", "off_cpu"), ".hidden.off_cpu");
  EXPECT_EQ(FlameGraphSink::derived_path("prof.folded", ""), "prof.folded");
}

TEST(FlameGraph, CpuSamplesAreCountedPerStack) {
  auto sink = make();
  feed_cpu(sink);
  sink.write(ev("py_stack", 2, "Worker"));  // no Python frame: still CPU time of the thread
  EXPECT_EQ(sink.folded_text(kCpu),
            "[no Python frames] 1\nmain (a.py:1);idle (a.py:9) 1\nmain (a.py:1);work (a.py:5) 3\n");
  EXPECT_EQ(sink.folded_text(kOffCpu), "");
}

TEST(FlameGraph, TimeKindsAreWeightedInMicroseconds) {
  auto sink = make();
  feed_waits(sink);
  EXPECT_EQ(sink.folded_text(kOffCpu),
            "main (a.py:1);sleepy (a.py:3);__x64_sys_nanosleep_[k];do_nanosleep_[k];schedule_[k] 25000\n");
  EXPECT_EQ(sink.folded_text(kGil), "main (a.py:1);io (a.py:7);GIL held by Hog 2250\n");
  EXPECT_EQ(sink.folded_text(kCpu), "");
}

TEST(FlameGraph, OffCpuShowsTheNativeCodePythonCalledBetweenPythonAndKernel) {
  auto sink = make();
  Json off = ev("off_cpu", 1, "Main");
  off["py_stack"] = "main (a.py:1)";
  off["off_cpu_ms"] = 1.0;
  off["kernel_stack"] = Json::array({"do_nanosleep"});
  // A full user stack: the frames on the leaf side of the evaluation loop.
  off["user_stack"] = Json::array({"_start [python3.11]", "_PyEval_EvalFrameDefault [python3.11]",
                                   "time_sleep [python3.11]", "clock_nanosleep [libc.so.6]"});
  sink.write(off);
  // No evaluation loop in it (no frame pointers): only the leaf is sure.
  off["user_stack"] = Json::array({"[unknown] [0x1234]", "[unknown] [libc.so.6+0x10fa4f]"});
  sink.write(off);
  EXPECT_EQ(sink.folded_text(kOffCpu),
            "main (a.py:1);[unknown] [libc.so.6];do_nanosleep_[k] 1000\n"
            "main (a.py:1);time_sleep [python3.11];clock_nanosleep [libc.so.6];do_nanosleep_[k] 1000\n");
}

TEST(FlameGraph, SpeedscopeHasOneProfilePerThreadAndKind) {
  auto sink = make();
  for (int i = 0; i < 4; ++i) {
    Json e = ev("py_stack", 1, "Main");
    e["stack"] = i < 3 ? "main (a.py:1);work (a.py:5)" : "main (a.py:1)";
    sink.write(e);
  }
  Json e2 = ev("py_stack", 2, "Worker");
  e2["stack"] = "run (b.py:2)";
  sink.write(e2);
  Json off = ev("off_cpu", 1, "Main");
  off["py_stack"] = "main (a.py:1)";
  off["kernel_stack"] = Json::array({"entry_SYSCALL_64", "schedule"});
  off["off_cpu_ms"] = 7.0;
  sink.write(off);

  auto doc = nlohmann::json::parse(sink.speedscope_json());
  EXPECT_EQ(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(doc["exporter"], "pyebpf test");
  const auto& frames = doc["shared"]["frames"];
  const auto& profiles = doc["profiles"];
  ASSERT_EQ(profiles.size(), 3u);
  // CPU profiles first, heaviest first; weights in ms = samples / 100 Hz.
  EXPECT_EQ(profiles[0]["name"], "Main (pid 10 tid 1) · CPU");
  EXPECT_EQ(profiles[0]["type"], "sampled");
  EXPECT_EQ(profiles[0]["unit"], "milliseconds");
  EXPECT_EQ(profiles[0]["weights"], nlohmann::json::array({30.0, 10.0}));
  EXPECT_DOUBLE_EQ(profiles[0]["endValue"].get<double>(), 40.0);
  EXPECT_EQ(profiles[1]["name"], "Worker (pid 10 tid 2) · CPU");
  EXPECT_EQ(profiles[2]["name"], "Main (pid 10 tid 1) · off-CPU");
  EXPECT_EQ(profiles[2]["weights"], nlohmann::json::array({7.0}));
  // Frames: Python ones carry file and line; kernel ones are marked.
  auto first = profiles[0]["samples"][0];
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(frames[first[0].get<int>()], nlohmann::json({{"name", "main"}, {"file", "a.py"}, {"line", 1}}));
  EXPECT_EQ(frames[first[1].get<int>()], nlohmann::json({{"name", "work"}, {"file", "a.py"}, {"line", 5}}));
  auto off_stack = profiles[2]["samples"][0];
  ASSERT_EQ(off_stack.size(), 3u);
  EXPECT_EQ(frames[off_stack[1].get<int>()]["name"], "entry_SYSCALL_64 [kernel]");
  for (const auto& p : profiles) EXPECT_EQ(p["samples"].size(), p["weights"].size());
}

TEST(Stacks, FramesReadBackFromText) {
  auto f = stack::parse_py_frame("Class.method (/srv/my app/x.py:120)");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->function, "Class.method");
  EXPECT_EQ(f->file, "/srv/my app/x.py");
  EXPECT_EQ(f->line, 120);
  EXPECT_FALSE(stack::parse_py_frame("<unknown>"));
  EXPECT_FALSE(stack::parse_py_frame("f (x.py:-1)"));
  EXPECT_EQ(report::short_frame(*stack::parse_py_frame("a (/x/y.py:1)")), "a (y.py:1)");
  EXPECT_EQ(report::function_of(*stack::parse_py_frame("a (/x/y.py:1)")), "a (/x/y.py)");
  for (const char* text : {"schedule", "nft_do_chain [nf_tables]", "[unknown] [libc.so.6+0x8a2b]",
                           "[unknown] [0xffffffffc0f00000]", "[truncated]", "g_main_loop_run [libglib-2.0.so.0]"})
    EXPECT_EQ(stack::text_of(stack::parse_native_frame(text)), text);
  EXPECT_EQ(stack::text_of(stack::parse_native_frame("__x64_sys_read+0x1a")), "__x64_sys_read");
}

TEST(Stacks, KernelWaitIsTheSystemCallElseTheFrameBelowTheScheduler) {
  auto wait = [](std::vector<std::string> root_first) {
    const auto& s = trackers::off_cpu_schema();
    Record r(s);
    record_from_json(Json{{"kernel_stack", root_first}}, r);
    return report::kernel_wait(r, s.kernel_stack);
  };
  EXPECT_EQ(wait({"__x64_sys_futex", "futex_wait", "schedule"}), "futex");
  EXPECT_EQ(wait({"entry_SYSCALL_64", "pipe_read", "schedule"}), "pipe_read");
  EXPECT_EQ(wait({}), "-");
}

}  // namespace
}  // namespace pyebpf::sinks
