// SPDX-License-Identifier: Apache-2.0
#include "bpf/ring_buffer.hpp"

#include <cerrno>

#include "pyebpf/error.hpp"

namespace pyebpf::bpf {

RingBuffer::RingBuffer(bpf_map* map, Handler handler, const std::string& owner) : handler_(std::move(handler)) {
  rb_.reset(ring_buffer__new(bpf_map__fd(map), &RingBuffer::dispatch, this, nullptr));
  if (!rb_) throw Error(errno_text(owner + ": cannot open ring buffer", errno));
}

int RingBuffer::epoll_fd() const { return ring_buffer__epoll_fd(rb_.get()); }

int RingBuffer::consume() {
  int n = ring_buffer__consume(rb_.get());
  return n < 0 ? 0 : n;
}

int RingBuffer::dispatch(void* ctx, void* data, std::size_t size) {
  static_cast<RingBuffer*>(ctx)->handler_(data, size);
  return 0;
}

}  // namespace pyebpf::bpf
