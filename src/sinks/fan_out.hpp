// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// Every event to every sink, in order. Does not own them.
class FanOutSink : public Sink {
 public:
  void add(Sink* sink) { sinks_.push_back(sink); }
  void remove(Sink* sink) { sinks_.erase(std::remove(sinks_.begin(), sinks_.end(), sink), sinks_.end()); }
  void write(const Record& record) override {
    for (Sink* s : sinks_) s->write(record);
  }
  void flush() override {
    for (Sink* s : sinks_) s->flush();
  }

 private:
  std::vector<Sink*> sinks_;
};

}  // namespace pyebpf::sinks
