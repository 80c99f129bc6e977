// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "sinks/json_writer.hpp"
#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// JSON lines to a file descriptor (stdout). Lines are buffered per batch and
// written on flush(), so `| jq` sees every batch as soon as BPF delivered it
// without a write(2) per event. EPIPE becomes OutputClosed.
class JsonLinesSink : public Sink {
 public:
  explicit JsonLinesSink(int fd) : fd_(fd) {}
  ~JsonLinesSink() override;

  void write(const Record& record) override;
  void flush() override;

 private:
  static constexpr std::size_t kFlushBytes = 1 << 16;
  int fd_;
  std::string buffer_;
  JsonWriter writer_;
};

}  // namespace pyebpf::sinks
