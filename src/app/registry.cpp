// SPDX-License-Identifier: Apache-2.0
#include "app/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "live/tally.hpp"
#include "pyebpf/error.hpp"

namespace pyebpf::trackers {
// Each defined next to its tracker (src/trackers/<name>.cpp).
const TrackerDescriptor& py_stack_tracker();
const TrackerDescriptor& gil_tracker();
const TrackerDescriptor& gc_tracker();
const TrackerDescriptor& offcpu_tracker();
const TrackerDescriptor& handoff_tracker();
const TrackerDescriptor& tcp_tracker();
const TrackerDescriptor& host_net_health_tracker();
}  // namespace pyebpf::trackers

namespace pyebpf::app {
namespace {

using trackers::TrackerDescriptor;

// What an --enable name turns on: a tracker, and which of its features.
struct Enabled {
  const TrackerDescriptor* descriptor = nullptr;
  std::vector<std::string> features;
};

std::optional<Enabled> resolve(std::string_view name) {
  for (const auto* d : tracker_registry()) {
    if (d->features.empty() && d->name == name) return Enabled{d, {}};
    for (const auto& f : d->features) {
      if (f.name != name) continue;
      return Enabled{d, f.parts.empty() ? std::vector<std::string>{f.name} : f.parts};
    }
  }
  return std::nullopt;
}

// Every feature of `d` that is a part, not a name for several.
std::vector<std::string> all_features(const TrackerDescriptor& d) {
  std::vector<std::string> out;
  for (const auto& f : d.features) {
    if (f.parts.empty()) out.push_back(f.name);
  }
  return out;
}

}  // namespace

const std::vector<const TrackerDescriptor*>& tracker_registry() {
  static const std::vector<const TrackerDescriptor*> registry = {
      &trackers::py_stack_tracker(),         // CPU: Python stacks sampled in BPF
      &trackers::gil_tracker(),              // GIL waits
      &trackers::gc_tracker(),               // garbage-collection pauses
      &trackers::offcpu_tracker(),           // why threads sleep
      &trackers::handoff_tracker(),          // request queue time
      &trackers::tcp_tracker(),              // tcp_connect, tcp_accept, tcp_loss
      &trackers::host_net_health_tracker(),  // network health snapshots
  };
  return registry;
}

std::string tracker_names_help() {
  std::vector<std::string_view> names;
  for (const auto* d : tracker_registry()) {
    if (d->features.empty()) names.push_back(d->name);
    for (const auto& f : d->features) names.push_back(f.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

TrackerOptionsMap add_tracker_options(CLI::App& cli) {
  TrackerOptionsMap out;
  for (const auto* d : tracker_registry()) {
    if (d->add_options) out.emplace(d->name, d->add_options(cli));
  }
  return out;
}

std::vector<std::unique_ptr<trackers::Tracker>> create_trackers(const std::vector<std::string>& names,
                                                                const TrackerOptionsMap& options) {
  struct Wanted {
    const TrackerDescriptor* descriptor;
    std::vector<std::string> features;
  };
  std::vector<Wanted> wanted;  // in the order first named
  auto add = [&](const TrackerDescriptor* d, const std::vector<std::string>& features) {
    auto it = std::find_if(wanted.begin(), wanted.end(), [&](const Wanted& w) { return w.descriptor == d; });
    if (it == wanted.end()) {
      wanted.push_back(Wanted{d, {}});
      it = wanted.end() - 1;
    }
    for (const auto& f : features) {
      if (std::find(it->features.begin(), it->features.end(), f) == it->features.end()) it->features.push_back(f);
    }
  };
  for (const auto& name : names) {
    auto enabled = resolve(name);
    if (!enabled) throw Error("unknown tracker '" + name + "'", "--enable takes: " + tracker_names_help());
    add(enabled->descriptor, enabled->features);
  }
  if (names.empty()) {
    for (const auto* d : tracker_registry()) add(d, all_features(*d));
  }
  std::vector<std::unique_ptr<trackers::Tracker>> out;
  for (auto& w : wanted) {
    // Features in the descriptor's order, whatever the order they were named in.
    std::vector<std::string> features;
    for (const auto& f : all_features(*w.descriptor)) {
      if (std::find(w.features.begin(), w.features.end(), f) != w.features.end()) features.push_back(f);
    }
    auto it = options.find(w.descriptor->name);
    out.push_back(w.descriptor->create(it == options.end() ? nullptr : it->second.get(), features));
  }
  return out;
}

std::vector<const sinks::TableSchema*> all_schemas() {
  std::vector<const sinks::TableSchema*> out;
  for (const auto* d : tracker_registry()) out.insert(out.end(), d->schemas.begin(), d->schemas.end());
  return out;
}

const sinks::TableSchema* schema_for_metric(std::string_view metric) {
  for (const auto* schema : all_schemas()) {
    if (schema->metric() == metric) return schema;
  }
  return nullptr;
}

sinks::Report make_report() {
  std::vector<sinks::Report::Part> parts;
  for (const auto* d : tracker_registry()) {
    if (d->report) parts.push_back({d->schemas, d->report()});
  }
  return sinks::Report(std::move(parts));
}

std::function<void(const sinks::Record&, live::Tally&)> top_feed(const TrackerOptionsMap& options) {
  using Feed = std::pair<const trackers::TrackerDescriptor*, const trackers::TrackerOptions*>;
  std::map<const sinks::TableSchema*, Feed> feeds;
  for (const auto* d : tracker_registry()) {
    if (!d->top) continue;
    auto it = options.find(d->name);
    for (const auto* schema : d->schemas) feeds[schema] = {d, it == options.end() ? nullptr : it->second.get()};
  }
  return [feeds = std::move(feeds)](const sinks::Record& r, live::Tally& tally) {
    auto it = feeds.find(&r.schema());
    if (it != feeds.end()) it->second.first->top(it->second.second, r, tally);
  };
}

std::vector<sinks::FlameGraphKind> flame_graph_kinds(const TrackerOptionsMap& options) {
  std::vector<sinks::FlameGraphKind> out;
  for (const auto* d : tracker_registry()) {
    if (!d->flame_graphs) continue;
    auto it = options.find(d->name);
    for (auto& kind : d->flame_graphs(it == options.end() ? nullptr : it->second.get())) out.push_back(std::move(kind));
  }
  return out;
}

std::string flame_graph_kinds_help(const TrackerOptionsMap& options, bool files) {
  std::vector<std::string> parts;
  for (const auto& kind : flame_graph_kinds(options)) {
    if (!files)
      parts.push_back(kind.name);
    else
      parts.push_back(kind.name + " in FILE" + (kind.file_suffix.empty() ? "" : "." + kind.file_suffix));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace pyebpf::app
