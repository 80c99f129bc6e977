// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// Keeps events in memory: for tests of trackers and sinks.
class CaptureSink : public Sink {
 public:
  void write(const Event& event) override { events.push_back(event); }
  std::vector<Event> events;
};

}  // namespace pyebpf::sinks
