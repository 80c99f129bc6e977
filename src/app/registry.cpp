// SPDX-License-Identifier: Apache-2.0
#include "app/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "pyebpf/error.hpp"

namespace pyebpf::trackers {
// Each defined next to its tracker (src/trackers/<name>.cpp).
const TrackerDescriptor& py_stack_tracker();
const TrackerDescriptor& gil_tracker();
const TrackerDescriptor& gc_tracker();
const TrackerDescriptor& offcpu_tracker();
const TrackerDescriptor& handoff_tracker();
const TrackerDescriptor& tcp_connect_tracker();
const TrackerDescriptor& tcp_accept_tracker();
const TrackerDescriptor& tcp_handshake_alias();
const TrackerDescriptor& tcp_loss_tracker();
const TrackerDescriptor& host_net_health_tracker();
}  // namespace pyebpf::trackers

namespace pyebpf::app {
namespace {

using trackers::TrackerDescriptor;

const TrackerDescriptor* find(std::string_view name) {
  for (const auto* d : tracker_registry()) {
    if (d->name == name) return d;
  }
  return nullptr;
}

}  // namespace

const std::vector<const TrackerDescriptor*>& tracker_registry() {
  static const std::vector<const TrackerDescriptor*> registry = {
      &trackers::py_stack_tracker(),        &trackers::gil_tracker(),         &trackers::gc_tracker(),
      &trackers::offcpu_tracker(),          &trackers::handoff_tracker(),     &trackers::tcp_connect_tracker(),
      &trackers::tcp_accept_tracker(),      &trackers::tcp_handshake_alias(), &trackers::tcp_loss_tracker(),
      &trackers::host_net_health_tracker(),
  };
  return registry;
}

std::string tracker_names_help() {
  std::vector<std::string_view> names;
  for (const auto* d : tracker_registry()) names.push_back(d->name);
  return fmt::format("{}", fmt::join(names, ", "));
}

TrackerOptionsMap add_tracker_options(CLI::App& cli) {
  TrackerOptionsMap out;
  // By add_options function: flags trackers share are added once.
  std::map<decltype(TrackerDescriptor::add_options), std::shared_ptr<trackers::TrackerOptions>> added;
  for (const auto* d : tracker_registry()) {
    if (!d->add_options) continue;
    auto& options = added[d->add_options];
    if (!options) options = d->add_options(cli);
    out.emplace(d->name, options);
  }
  return out;
}

std::vector<CreatedTracker> create_trackers(const std::vector<std::string>& names, const TrackerOptionsMap& options) {
  struct Wanted {
    const TrackerDescriptor* descriptor;
    bool named;
  };
  std::vector<Wanted> wanted;
  auto add = [&](const TrackerDescriptor* d, bool named) {
    auto it = std::find_if(wanted.begin(), wanted.end(), [&](const Wanted& w) { return w.descriptor == d; });
    if (it == wanted.end())
      wanted.push_back({d, named});
    else
      it->named |= named;
  };
  for (const auto& name : names) {
    const TrackerDescriptor* d = find(name);
    if (!d) throw Error("unknown tracker '" + name + "'", "--enable takes: " + tracker_names_help());
    if (d->expands_to.empty()) add(d, true);
    for (const auto& sub : d->expands_to) add(find(sub), true);
  }
  if (names.empty()) {
    for (const auto* d : tracker_registry()) {
      if (d->create) add(d, false);
    }
  }
  std::vector<CreatedTracker> out;
  for (const auto& w : wanted) {
    auto it = options.find(w.descriptor->name);
    out.push_back({w.descriptor->create(it == options.end() ? nullptr : it->second.get()), w.named});
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

std::vector<sinks::FlameGraphKind> flame_graph_kinds(const TrackerOptionsMap& options) {
  std::vector<sinks::FlameGraphKind> out;
  for (const auto* d : tracker_registry()) {
    if (!d->flame_graphs) continue;
    auto it = options.find(d->name);
    for (auto& kind : d->flame_graphs(it == options.end() ? nullptr : it->second.get())) out.push_back(std::move(kind));
  }
  return out;
}

}  // namespace pyebpf::app
