// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <memory>

#include "pyebpf/fd.hpp"

namespace pyebpf::bpf {

// RAII for libbpf objects (skeletons: bpf_runtime/skeleton.hpp).
struct LinkDeleter {
  void operator()(bpf_link* link) const noexcept { bpf_link__destroy(link); }
};

// An attached BPF link: one libbpf made, or a bare link descriptor for the
// link types Debian 12's libbpf (1.1) cannot create (bpf_runtime/uprobe_links.hpp).
// Destroying it detaches.
class Link {
 public:
  Link() = default;
  explicit Link(bpf_link* link) : libbpf_(link) {}
  explicit Link(Fd fd) : fd_(std::move(fd)) {}

  explicit operator bool() const noexcept { return libbpf_ || fd_; }
  int fd() const noexcept { return libbpf_ ? bpf_link__fd(libbpf_.get()) : fd_.get(); }
  void reset() noexcept {
    libbpf_.reset();
    fd_.reset();
  }

 private:
  std::unique_ptr<bpf_link, LinkDeleter> libbpf_;
  Fd fd_;
};

struct RingBufferDeleter {
  void operator()(ring_buffer* rb) const noexcept { ring_buffer__free(rb); }
};
using RingBufferHandle = std::unique_ptr<ring_buffer, RingBufferDeleter>;

}  // namespace pyebpf::bpf
