// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf_runtime/handles.hpp"
#include "util/timer.hpp"

namespace pyebpf::bpf {

// Bytes for a ring buffer that must hold `seconds` of records arriving at
// `bytes_per_second` while the reader is away: a power of two (the kernel's
// rule) from 256 KiB to 64 MiB. A ring's pages stay resident for the whole
// run (and count twice in RSS: the kernel maps them twice), so rings are
// sized by need, not by habit.
std::uint32_t ring_bytes_for(double bytes_per_second, double seconds);

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
