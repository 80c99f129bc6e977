// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <cstddef>
#include <functional>
#include <string>

#include "bpf/handles.hpp"

namespace pyebpf::bpf {

// A BPF ring buffer consumer. The handler runs on the caller's thread during
// poll()/drain(); its epoll fd joins the runner's event loop.
class RingBuffer {
 public:
  using Handler = std::function<void(const void* data, std::size_t size)>;

  // Throws pyebpf::Error if the ring buffer cannot be set up.
  RingBuffer(bpf_map* map, Handler handler, const std::string& owner);
  RingBuffer(RingBuffer&&) = delete;

  int epoll_fd() const;
  // Consumes what is available now without blocking; returns events handled.
  int consume();

 private:
  static int dispatch(void* ctx, void* data, std::size_t size);

  Handler handler_;
  RingBufferHandle rb_;
};

}  // namespace pyebpf::bpf
