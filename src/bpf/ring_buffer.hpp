// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf/handles.hpp"
#include "util/timer.hpp"

namespace pyebpf::bpf {

// A BPF ring buffer consumer. The handler runs on the caller's thread during
// consume(); its fds join the runner's event loop.
class RingBuffer {
 public:
  using Handler = std::function<void(const void* data, std::size_t size)>;

  // For a BPF side that wakes the reader itself (on every record, or by
  // pyebpf_rb_wakeup_flags). Throws pyebpf::Error if it cannot be set up.
  RingBuffer(bpf_map* map, Handler handler, const std::string& owner);
  // For a BPF side that holds wakeups back until much is waiting: also
  // drained about every `poll`, at jittered times (+-25%, see jittered()), so
  // the reader lands on a CPU just before a sample only in proportion to the
  // CPU it really uses.
  RingBuffer(bpf_map* map, Handler handler, const std::string& owner, std::chrono::milliseconds poll);
  RingBuffer(RingBuffer&&) = delete;

  std::vector<int> wait_fds() const;
  // Consumes what is available now without blocking; returns events handled.
  int consume();

 private:
  static int dispatch(void* ctx, void* data, std::size_t size);

  Handler handler_;
  RingBufferHandle rb_;
  std::optional<JitteredTimer> poll_;
};

}  // namespace pyebpf::bpf
