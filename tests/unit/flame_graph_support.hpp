// The flame-graph sink fed events as pyebpf prints them, for the tests of
// its formats (folded, speedscope, pprof, HTML).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "app/registry.hpp"
#include "sinks/flame_graph_sink.hpp"
#include "sinks/record_input.hpp"
#include "test_support.hpp"

namespace pyebpf::sinks::test_flame {

using Json = nlohmann::ordered_json;

// The kinds in registry order.
constexpr std::size_t kCpu = 0, kGil = 1, kOffCpu = 2;

inline Json ev(const char* metric, long tid, const char* thread) {
  return {{"metric", metric}, {"pid", 10}, {"tid", tid}, {"thread_name", thread}};
}

// Every tracker's kinds, py_stack sampling at 100 Hz, and the files to write (none by default).
inline FlameGraphSink::Options options(std::string pprof_path = "", std::string html_path = "") {
  return {.folded_path = "",
          .speedscope_path = "",
          .title = "title",
          .exporter = "pyebpf test",
          .kinds = app::flame_graph_kinds(test::parse_args({"--pystack-frequency", "100"})->trackers),
          .pprof_path = std::move(pprof_path),
          .html_path = std::move(html_path)};
}

// The sink; write() takes events as pyebpf prints them.
struct FedSink {
  FlameGraphSink sink;
  explicit FedSink(FlameGraphSink::Options o = options()) : sink(std::move(o)) {}
  void write(const Json& e) {
    Record r(*app::schema_for_metric(e.at("metric").get<std::string>()));
    record_from_json(e, r);
    sink.write(r);
  }
  std::string folded_text(std::size_t kind) const { return sink.folded_text(kind); }
  std::string speedscope_json() const { return sink.speedscope_json(); }
};

// Three CPU samples of Main in work(), one of Worker in idle().
inline void feed_cpu(FedSink& sink) {
  for (int i = 0; i < 3; ++i) {
    Json e = ev("py_stack", 1, "Main");
    e["stack"] = "main (a.py:1);work (a.py:5)";
    sink.write(e);
  }
  Json other = ev("py_stack", 2, "Worker");
  other["stack"] = "main (a.py:1);idle (a.py:9)";
  sink.write(other);
}

// Two 12.5 ms sleeps of Main in sleepy() (nanosleep), and one 2.25 ms wait
// of Main in io() for the GIL "Hog" held.
inline void feed_waits(FedSink& sink) {
  Json off = ev("off_cpu", 1, "Main");
  off["py_stack"] = "main (a.py:1);sleepy (a.py:3)";
  off["kernel_stack"] = Json::array({"__x64_sys_nanosleep", "do_nanosleep", "schedule"});  // root first
  off["off_cpu_ms"] = 12.5;
  sink.write(off);
  sink.write(off);
  Json gil = ev("gil_wait", 1, "Main");
  gil["waiter_py_stack"] = "main (a.py:1);io (a.py:7)";
  gil["holder_thread_name"] = "Hog";
  gil["duration_ms"] = 2.25;
  sink.write(gil);
}

}  // namespace pyebpf::sinks::test_flame
