// SPDX-License-Identifier: Apache-2.0
#include "sinks/flame_graph_html.hpp"

#include <string_view>

#include "pyebpf/error.hpp"

namespace pyebpf::embedded {
extern const unsigned char flame_graph_html[];
extern const std::size_t flame_graph_html_size;
}  // namespace pyebpf::embedded

namespace pyebpf::sinks {
namespace {

// Where the template takes the data: inside <script type="application/json">.
constexpr std::string_view kDataMarker = "/*PYEBPF_FLAME_GRAPH_DATA*/";

const char* kind_name(FlameFrame::Kind kind) {
  switch (kind) {
    case FlameFrame::Kind::Python:
      return "python";
    case FlameFrame::Kind::Native:
      return "native";
    case FlameFrame::Kind::Kernel:
      return "kernel";
    case FlameFrame::Kind::Label:
      break;
  }
  return "label";
}

}  // namespace

nlohmann::json flame_graph_html_data(const FlameGraphs& graphs, const std::string& title) {
  nlohmann::json frames = nlohmann::json::array();
  for (const auto& f : graphs.frames) frames.push_back({kind_name(f.kind), f.name, f.file, f.line});
  nlohmann::json kinds = nlohmann::json::array();
  for (std::size_t k = 0; k < graphs.kinds.size(); ++k) {
    if (graphs.events[k] == 0) continue;
    const FlameGraphKind& kind = graphs.kinds[k];
    nlohmann::json threads = nlohmann::json::array();
    for (const auto& [key, p] : graphs.profiles) {
      if (p.kind != k) continue;
      nlohmann::json stacks = nlohmann::json::array();
      for (const auto& s : p.stacks) stacks.push_back({s.frames, s.weight});
      threads.push_back(
          {{"pid", p.pid}, {"tid", p.tid}, {"name", p.thread}, {"total", p.total}, {"stacks", std::move(stacks)}});
    }
    kinds.push_back({{"name", kind.name},
                     {"unit", kind.counts_samples ? "samples" : "ms"},
                     {"ms", kind.speedscope_ms},
                     {"events", graphs.events[k]},
                     {"threads", std::move(threads)}});
  }
  return {{"title", title}, {"frames", std::move(frames)}, {"kinds", std::move(kinds)}};
}

std::string flame_graph_html(const FlameGraphs& graphs, const std::string& title) {
  std::string data =
      flame_graph_html_data(graphs, title).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Frame names come from the target: no "</script>" in them may end the
  // data block. '<' appears only inside JSON strings, where \u003c is the same.
  std::string safe;
  safe.reserve(data.size());
  for (char c : data) {
    if (c == '<')
      safe += "\\u003c";
    else
      safe += c;
  }
  std::string_view page(reinterpret_cast<const char*>(embedded::flame_graph_html), embedded::flame_graph_html_size);
  auto at = page.find(kDataMarker);
  if (at == std::string_view::npos) throw Error("the embedded flame graph template has no data marker");
  std::string out;
  out.reserve(page.size() + safe.size());
  out.append(page.substr(0, at)).append(safe).append(page.substr(at + kDataMarker.size()));
  return out;
}

}  // namespace pyebpf::sinks
