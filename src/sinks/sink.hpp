// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace pyebpf::sinks {

// One event: a flat JSON object whose keys keep insertion order, so every
// sink (stdout, files, databases) sees fields in the documented order.
using Event = nlohmann::ordered_json;

// Thrown by a sink whose output went away (stdout closed by `| head`).
class OutputClosed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where events go. write() must not block on slow consumers for long;
// flush() is called after every batch the runner reads from BPF.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const Event& event) = 0;
  virtual void flush() {}
};

// Serialises one event as a single line of valid UTF-8 JSON (invalid bytes
// replaced), the format of stdout and of the --also-stdout copy.
std::string to_json_line(const Event& event);

}  // namespace pyebpf::sinks
