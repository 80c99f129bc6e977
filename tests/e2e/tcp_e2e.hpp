// SPDX-License-Identifier: Apache-2.0
// Shared by the tcp_connect, tcp_accept and tcp_loss end-to-end tests.
// Traffic stays on loopback or in network namespaces the workloads create
// (anonymous ones, see tests/workloads/netns.py), so concurrent runs of other
// suites on the same machine neither see nor disturb it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace pyebpf::e2e {

// The TCP trackers do not depend on the interpreter's version except for
// thread names: run them on Debian's stripped static 3.11 and on the newest
// pyenv build.
inline std::vector<PythonBuild> tcp_pythons() {
  std::vector<PythonBuild> out;
  const PythonBuild* newest = nullptr;
  auto all = test_pythons(8, 13);
  for (const auto& b : all) {
    if (b.label.rfind("debian", 0) == 0) out.push_back(b);
    if (b.label.rfind("pyenv", 0) == 0 && (!newest || b.minor > newest->minor)) newest = &b;
  }
  if (newest) out.push_back(*newest);
  return out;
}

inline std::vector<Json> where(const std::vector<Json>& events, const std::function<bool(const Json&)>& keep) {
  std::vector<Json> out;
  for (const auto& e : events) {
    if (keep(e)) out.push_back(e);
  }
  return out;
}

// The event's local/remote ends equal the flow's (src_ip, src_port, dst_ip, dst_port).
inline bool same_flow(const Json& e, const Json& flow) {
  return e.at("src_ip") == flow.at("src_ip") && e.at("src_port") == flow.at("src_port") &&
         e.at("dst_ip") == flow.at("dst_ip") && e.at("dst_port") == flow.at("dst_port");
}

}  // namespace pyebpf::e2e
