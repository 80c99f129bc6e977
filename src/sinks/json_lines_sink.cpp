// SPDX-License-Identifier: Apache-2.0
#include "sinks/json_lines_sink.hpp"

#include <unistd.h>

#include <cerrno>

#include "pyebpf/error.hpp"

namespace pyebpf::sinks {

std::string to_json_line(const Event& event) {
  return event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

JsonLinesSink::~JsonLinesSink() {
  try {
    flush();
  } catch (...) {
    // Destructors never throw; a closed output at exit loses nothing further.
  }
}

void JsonLinesSink::write(const Event& event) {
  buffer_ += to_json_line(event);
  buffer_ += '\n';
  if (buffer_.size() >= kFlushBytes) flush();
}

void JsonLinesSink::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      buffer_.clear();
      if (err == EPIPE) throw OutputClosed("stdout closed");
      throw Error(errno_text("write events", err));
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

}  // namespace pyebpf::sinks
