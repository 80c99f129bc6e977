// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include "sinks/record.hpp"

namespace pyebpf::sinks {

using SteadyClock = std::chrono::steady_clock;

// Thrown by a sink whose output went away (stdout closed by `| head`).
class OutputClosed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where events go. write() runs on the thread that reads BPF and must never
// block on a slow consumer (database sinks queue, see AsyncSink); flush() is
// called after every batch the runner reads from BPF.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const Record& record) = 0;
  virtual void flush() {}
  // End of the run: stop taking events and deliver what is still held,
  // giving up at `deadline`. wait_closed() returns true once done, false if
  // `until` came first (the caller may then move the deadline earlier by
  // calling begin_close() again, e.g. on a second Ctrl-C).
  virtual void begin_close(SteadyClock::time_point /*deadline*/) { flush(); }
  virtual bool wait_closed(SteadyClock::time_point /*until*/) { return true; }
  // One line for the end-of-run summary: what was written where, and every
  // event lost and why. Empty: nothing to say.
  virtual std::string summary() const { return {}; }
};

}  // namespace pyebpf::sinks
