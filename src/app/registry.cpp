// SPDX-License-Identifier: Apache-2.0
#include "app/registry.hpp"

#include <algorithm>

#include "pyebpf/error.hpp"
#include "trackers/gc.hpp"
#include "trackers/gil.hpp"
#include "trackers/handoff.hpp"
#include "trackers/host_net_health.hpp"
#include "trackers/offcpu.hpp"
#include "trackers/py_stack.hpp"
#include "trackers/tcp_accept.hpp"
#include "trackers/tcp_connect.hpp"
#include "trackers/tcp_loss.hpp"

namespace pyebpf::app {
namespace {

template <typename T>
std::function<std::unique_ptr<trackers::Tracker>()> make() {
  return [] { return std::make_unique<T>(); };
}

std::string implemented_names() {
  std::string out;
  for (const auto& t : tracker_registry()) {
    if (t.create) out += (out.empty() ? "" : ", ") + t.name;
  }
  return out;
}

}  // namespace

const std::vector<TrackerInfo>& tracker_registry() {
  static const std::vector<TrackerInfo> registry = {
      {"py_stack", "CPU profiler: Python stacks sampled in BPF", make<trackers::PyStackTracker>(), {}},
      {"gil", "GIL waits with holder and waiter stacks", make<trackers::GilTracker>(), {}},
      {"gc", "garbage collection pauses", make<trackers::GcTracker>(), {}},
      {"offcpu", "why threads sleep: kernel, native and Python stacks", make<trackers::OffCpuTracker>(), {}},
      {"handoff", "request queue time in servers (gunicorn gthread)", make<trackers::HandoffTracker>(), {}},
      {"tcp_connect", "outbound TCP handshakes", make<trackers::TcpConnectTracker>(), {}},
      {"tcp_accept", "inbound TCP connections and accept-queue dwell", make<trackers::TcpAcceptTracker>(), {}},
      {"tcp_handshake", "tcp_connect + tcp_accept", nullptr, {"tcp_connect", "tcp_accept"}},
      {"tcp_loss", "retransmits, resets, zero windows", make<trackers::TcpLossTracker>(), {}},
      {"host_net_health", "periodic host network health snapshot", make<trackers::HostNetHealthTracker>(), {}},
  };
  return registry;
}

std::string tracker_names_help() {
  std::string out;
  for (const auto& t : tracker_registry()) {
    out += (out.empty() ? "" : ", ") + t.name;
    if (!t.create && t.expands_to.empty()) out += " (planned)";
  }
  return out;
}

std::vector<std::unique_ptr<trackers::Tracker>> create_trackers(const std::vector<std::string>& names) {
  const auto& registry = tracker_registry();
  std::vector<std::string> wanted;
  auto add = [&](const std::string& name) {
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) wanted.push_back(name);
  };
  for (const auto& name : names) {
    auto it = std::find_if(registry.begin(), registry.end(), [&](const TrackerInfo& t) { return t.name == name; });
    if (it == registry.end()) throw Error("unknown tracker '" + name + "'", "--enable takes: " + tracker_names_help());
    if (it->expands_to.empty()) {
      add(name);
    } else {
      for (const auto& sub : it->expands_to) add(sub);
    }
  }
  if (names.empty()) {
    for (const auto& t : registry) {
      if (t.create) add(t.name);
    }
  }
  std::vector<std::unique_ptr<trackers::Tracker>> out;
  for (const auto& name : wanted) {
    auto it = std::find_if(registry.begin(), registry.end(), [&](const TrackerInfo& t) { return t.name == name; });
    if (!it->create)
      throw Error("tracker '" + name + "' is not implemented yet", "available now: " + implemented_names());
    out.push_back(it->create());
  }
  return out;
}

}  // namespace pyebpf::app
