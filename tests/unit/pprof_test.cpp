// pprof output: the profile decoded again with the generated parser must say
// what the folded file says, with the types, units, labels and lines pprof
// consumers read. (go tool pprof reads real runs' files in the e2e tests.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "flame_graph_support.hpp"
#include "proto/profile.pb.h"
#include "sinks/pprof_format.hpp"
#include "trackers/py_stack/py_stack_events.hpp"
#include "util/gzip.hpp"

namespace pyebpf::sinks {
namespace {

using namespace test_flame;
namespace pp = perftools::profiles;

pp::Profile decode(const std::string& bytes) {
  pp::Profile p;
  EXPECT_TRUE(p.ParseFromString(bytes));
  return p;
}

// The profile read back as a consumer would: strings resolved, stacks root
// first in folded text, labels by key.
struct Decoded {
  const pp::Profile& p;
  std::string str(std::int64_t i) const { return p.string_table(static_cast<int>(i)); }
  const pp::Function& function(std::uint64_t id) const {
    for (const auto& f : p.function())
      if (f.id() == id) return f;
    throw std::runtime_error("no function " + std::to_string(id));
  }
  std::string frame(std::uint64_t location_id) const {
    for (const auto& l : p.location()) {
      if (l.id() != location_id) continue;
      const pp::Function& f = function(l.line(0).function_id());
      std::string file = str(f.filename());
      if (file.empty()) return str(f.name());
      return str(f.name()) + " (" + file + ":" + std::to_string(l.line(0).line()) + ")";
    }
    throw std::runtime_error("no location " + std::to_string(location_id));
  }
  std::string stack(const pp::Sample& s) const {
    std::string out;
    for (int i = s.location_id_size() - 1; i >= 0; --i) out += (out.empty() ? "" : ";") + frame(s.location_id(i));
    return out;
  }
  std::map<std::string, std::string> labels(const pp::Sample& s) const {
    std::map<std::string, std::string> out;
    for (const auto& l : s.label()) out[str(l.key())] = l.str() ? str(l.str()) : std::to_string(l.num());
    return out;
  }
  std::string type(const pp::ValueType& t) const { return str(t.type()) + "/" + str(t.unit()); }
};

TEST(Pprof, CpuProfileCountsSamplesAndTimePerStackAndThread) {
  FedSink sink;
  for (int i = 0; i < 3; ++i) {
    Json e = ev("py_stack", 1, "Main");
    e["env"] = "prod";
    e["ts_us"] = 1'700'000'000'000'000 + i * 1000;
    e["stack"] = i < 2 ? "main (a.py:1);work (a.py:5)" : "main (a.py:1);work (a.py:6)";
    sink.write(e);
  }
  Json other = ev("py_stack", 2, "Worker");
  other["stack"] = "main (a.py:1);idle (b.py:9)";
  sink.write(other);

  pp::Profile p = decode(pprof_profile(sink.sink.graphs(), kCpu, {"title", "pyebpf test"}));
  Decoded d{p};
  EXPECT_EQ(p.string_table(0), "");
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(d.type(p.sample_type(0)), "samples/count");
  EXPECT_EQ(d.type(p.sample_type(1)), "cpu/nanoseconds");
  EXPECT_EQ(d.type(p.period_type()), "cpu/nanoseconds");
  EXPECT_EQ(p.period(), 10'000'000);  // 100 Hz
  EXPECT_EQ(d.str(p.default_sample_type()), "cpu");
  EXPECT_EQ(p.time_nanos(), 1'700'000'000'000'000'000);
  EXPECT_EQ(p.duration_nanos(), 2'000'000);
  ASSERT_EQ(p.comment_size(), 2);
  EXPECT_EQ(d.str(p.comment(0)), "title");

  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_stack;
  for (const auto& s : p.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    auto& v = by_stack[d.stack(s)];
    v.first += s.value(0);
    v.second += s.value(1);
    auto labels = d.labels(s);
    EXPECT_EQ(labels["pid"], "10");
    EXPECT_EQ(labels["thread_name"], labels["tid"] == "1" ? "Main" : "Worker");
    EXPECT_EQ(labels.count("env"), labels["tid"] == "1" ? 1u : 0u);  // only known values
  }
  using V = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(by_stack, (std::map<std::string, V>{{"main (a.py:1);idle (b.py:9)", V{1, 10'000'000}},
                                                {"main (a.py:1);work (a.py:5)", V{2, 20'000'000}},
                                                {"main (a.py:1);work (a.py:6)", V{1, 10'000'000}}}));
  // A function per (name, file), a location per executing line: "work" has
  // two lines, one function.
  EXPECT_EQ(p.function_size(), 3);
  EXPECT_EQ(p.location_size(), 4);
  for (const auto& f : p.function()) EXPECT_NE(f.id(), 0u);
  for (const auto& l : p.location()) EXPECT_NE(l.id(), 0u);
}

TEST(Pprof, TimeKindsAreNanosecondsWithKernelFramesAsFunctions) {
  FedSink sink;
  feed_waits(sink);

  pp::Profile off_cpu = decode(pprof_profile(sink.sink.graphs(), kOffCpu, {}));
  Decoded d{off_cpu};
  ASSERT_EQ(off_cpu.sample_type_size(), 1);
  EXPECT_EQ(d.type(off_cpu.sample_type(0)), "off_cpu/nanoseconds");
  EXPECT_EQ(off_cpu.period(), 1);
  ASSERT_EQ(off_cpu.sample_size(), 1);
  EXPECT_EQ(off_cpu.sample(0).value(0), 25'000'000);
  EXPECT_EQ(d.stack(off_cpu.sample(0)), "main (a.py:1);sleepy (a.py:3);__x64_sys_nanosleep;do_nanosleep;schedule");
  // Kernel frames in their own mapping, all frames symbolized already.
  ASSERT_EQ(off_cpu.mapping_size(), 2);
  for (const auto& m : off_cpu.mapping()) EXPECT_TRUE(m.has_functions() && m.has_filenames() && m.has_line_numbers());
  std::map<std::string, std::string> mapping_of;
  for (const auto& l : off_cpu.location()) {
    for (const auto& m : off_cpu.mapping())
      if (m.id() == l.mapping_id()) mapping_of[d.frame(l.id())] = d.str(m.filename());
  }
  EXPECT_EQ(mapping_of["schedule"], "[kernel.kallsyms]");
  EXPECT_EQ(mapping_of["sleepy (a.py:3)"], "[python]");
  // Only this kind's frames: the GIL graph's are not in the off-CPU profile.
  EXPECT_EQ(off_cpu.location_size(), 5);

  pp::Profile g = decode(pprof_profile(sink.sink.graphs(), kGil, {}));
  Decoded dg{g};
  EXPECT_EQ(dg.type(g.sample_type(0)), "gil_wait/nanoseconds");
  ASSERT_EQ(g.sample_size(), 1);
  EXPECT_EQ(g.sample(0).value(0), 2'250'000);
  EXPECT_EQ(dg.stack(g.sample(0)), "main (a.py:1);io (a.py:7);GIL held by Hog");
}

TEST(Pprof, NativeFramesAreFunctionsInTheirModulesMapping) {
  FedSink sink;
  Json off = ev("off_cpu", 1, "Main");
  off["py_stack"] = "main (a.py:1)";
  off["user_stack"] = Json::array({"_PyEval_EvalFrameDefault [python3.11]", "read [libc.so.6]"});
  off["kernel_stack"] = Json::array({"schedule"});
  off["off_cpu_ms"] = 2.0;
  sink.write(off);
  pp::Profile p = decode(pprof_profile(sink.sink.graphs(), kOffCpu, {}));
  Decoded d{p};
  ASSERT_EQ(p.sample_size(), 1);
  EXPECT_EQ(d.stack(p.sample(0)), "main (a.py:1);read;schedule");
  std::map<std::string, std::string> mapping_of;
  for (const auto& l : p.location()) {
    for (const auto& m : p.mapping())
      if (m.id() == l.mapping_id()) mapping_of[d.frame(l.id())] = d.str(m.filename());
  }
  EXPECT_EQ(mapping_of, (std::map<std::string, std::string>{
                            {"main (a.py:1)", "[python]"}, {"read", "libc.so.6"}, {"schedule", "[kernel.kallsyms]"}}));
}

TEST(Pprof, FunctionsStartAtTheFirstLineTheSymbolizerRead) {
  FedSink sink;
  const auto& s = trackers::py_stack_schema();
  Record r(s);
  record_from_json(ev("py_stack", 1, "Main"), r);
  r.begin_py_stack(s.stack);
  r.add_py_frame({"main", "a.py", 3, 1});
  r.add_py_frame({"work", "a.py", 9, 7});
  sink.sink.write(r);
  Json stored = ev("py_stack", 1, "Main");  // read back from text: no first lines
  stored["stack"] = "other (b.py:4)";
  sink.write(stored);
  pp::Profile p = decode(pprof_profile(sink.sink.graphs(), kCpu, {}));
  Decoded d{p};
  std::map<std::string, std::int64_t> start;
  for (const auto& f : p.function()) start[d.str(f.name())] = f.start_line();
  EXPECT_EQ(start, (std::map<std::string, std::int64_t>{{"main", 1}, {"work", 7}, {"other", 0}}));
}

TEST(Pprof, FilesAreGzippedAndNamedLikeFoldedOnes) {
  auto dir = std::filesystem::temp_directory_path() / ("pyebpf-pprof-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir / "prof.pb.gz";
  {
    FedSink sink(options(path));
    EXPECT_TRUE(std::filesystem::exists(path)) << "written at start, so a bad path fails at once";
    Json e = ev("py_stack", 1, "Main");
    e["stack"] = "main (a.py:1)";
    sink.write(e);
    Json off = ev("off_cpu", 1, "Main");
    off["off_cpu_ms"] = 1.0;
    sink.write(off);
    sink.sink.begin_close({});
    EXPECT_NE(sink.sink.summary().find(dir / "prof.pb.off_cpu.gz"), std::string::npos) << sink.sink.summary();
  }
  auto read = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  pp::Profile cpu = decode(gzip_decompress(read(path)));
  EXPECT_EQ(cpu.sample_size(), 1);
  pp::Profile off = decode(gzip_decompress(read(dir / "prof.pb.off_cpu.gz")));
  ASSERT_EQ(off.sample_size(), 1);
  EXPECT_EQ(off.sample(0).value(0), 1'000'000);
  EXPECT_FALSE(std::filesystem::exists(dir / "prof.pb.gil_wait.gz")) << "no GIL wait: no file";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pyebpf::sinks
