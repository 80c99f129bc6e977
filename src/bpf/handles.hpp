// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <memory>

namespace pyebpf::bpf {

// RAII for libbpf objects (skeletons: bpf/skeleton.hpp).
struct LinkDeleter {
  void operator()(bpf_link* link) const noexcept { bpf_link__destroy(link); }
};
using Link = std::unique_ptr<bpf_link, LinkDeleter>;

struct RingBufferDeleter {
  void operator()(ring_buffer* rb) const noexcept { ring_buffer__free(rb); }
};
using RingBufferHandle = std::unique_ptr<ring_buffer, RingBufferDeleter>;

}  // namespace pyebpf::bpf
