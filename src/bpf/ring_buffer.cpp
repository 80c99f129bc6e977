// SPDX-License-Identifier: Apache-2.0
#include "bpf/ring_buffer.hpp"

#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/timer.hpp"

namespace pyebpf::bpf {

RingBuffer::RingBuffer(bpf_map* map, Handler handler, const std::string& owner) : handler_(std::move(handler)) {
  rb_.reset(ring_buffer__new(bpf_map__fd(map), &RingBuffer::dispatch, this, nullptr));
  if (!rb_) throw Error(errno_text(owner + ": cannot open ring buffer", errno));
}

RingBuffer::RingBuffer(bpf_map* map, Handler handler, const std::string& owner, std::chrono::milliseconds poll)
    : RingBuffer(map, std::move(handler), owner) {
  poll_ = poll;
  poll_timer_ = make_timer(poll_, {});
}

std::vector<int> RingBuffer::wait_fds() const {
  std::vector<int> fds{ring_buffer__epoll_fd(rb_.get())};
  if (poll_timer_) fds.push_back(poll_timer_.get());
  return fds;
}

int RingBuffer::consume() {
  if (poll_timer_ && expired(poll_timer_)) arm_poll();
  int n = ring_buffer__consume(rb_.get());
  return n < 0 ? 0 : n;
}

void RingBuffer::arm_poll() { arm_once(poll_timer_, jittered(poll_, 0.25)); }

int RingBuffer::dispatch(void* ctx, void* data, std::size_t size) {
  static_cast<RingBuffer*>(ctx)->handler_(data, size);
  return 0;
}

}  // namespace pyebpf::bpf
