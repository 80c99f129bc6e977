// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// Keeps copies of the records written: how decoder and sink tests see what a
// tracker emitted.
class CaptureSink : public Sink {
 public:
  void write(const Record& record) override { records.push_back(record); }
  std::vector<Record> records;
};

}  // namespace pyebpf::sinks
