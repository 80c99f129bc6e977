// SPDX-License-Identifier: Apache-2.0
#include "sinks/json_lines_sink.hpp"

#include <unistd.h>

#include <cerrno>

#include "pyebpf/error.hpp"

namespace pyebpf::sinks {

JsonLinesSink::~JsonLinesSink() {
  try {
    flush();
  } catch (...) {
    // Destructors never throw; a closed output at exit loses nothing further.
  }
}

void JsonLinesSink::write(const Record& record) {
  writer_.append(buffer_, record);
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
