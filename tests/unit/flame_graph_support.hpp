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

}  // namespace pyebpf::sinks::test_flame
