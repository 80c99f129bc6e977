// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/ring_buffer.hpp"

#include <cerrno>

#include "pyebpf/error.hpp"

namespace pyebpf::bpf {

std::uint32_t ring_bytes_for(double bytes_per_second, double seconds) {
  constexpr std::uint32_t kMin = 256 << 10, kMax = 64 << 20;
  const double need = bytes_per_second * seconds;
  std::uint32_t bytes = kMin;
  while (bytes < kMax && bytes < need) bytes *= 2;
  return bytes;
}

RingBuffer::RingBuffer(bpf_map* map, Handler handler, const std::string& owner) : handler_(std::move(handler)) {
  rb_.reset(ring_buffer__new(bpf_map__fd(map), &RingBuffer::dispatch, this, nullptr));
  if (!rb_) throw Error(errno_text(owner + ": cannot open ring buffer", errno));
}

RingBuffer::RingBuffer(bpf_map* map, Handler handler, const std::string& owner, std::chrono::milliseconds poll)
    : RingBuffer(map, std::move(handler), owner) {
  poll_.emplace(poll, 0.25);
}

std::vector<int> RingBuffer::wait_fds() const {
  std::vector<int> fds{ring_buffer__epoll_fd(rb_.get())};
  if (poll_) fds.push_back(poll_->fd());
  return fds;
}

int RingBuffer::consume() {
  if (poll_) poll_->expired();
  int n = ring_buffer__consume(rb_.get());
  return n < 0 ? 0 : n;
}

int RingBuffer::dispatch(void* ctx, void* data, std::size_t size) {
  static_cast<RingBuffer*>(ctx)->handler_(data, size);
  return 0;
}

}  // namespace pyebpf::bpf
