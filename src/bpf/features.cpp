// SPDX-License-Identifier: Apache-2.0
#include "bpf/features.hpp"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

namespace pyebpf::bpf {

bool kernel_has_bpf_loop() {
  static const bool has = [] {
    bool ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr) == 1;
    spdlog::debug("kernel {} bpf_loop: Python frame walks use {}", ok ? "has" : "lacks",
                  ok ? "bpf_loop" : "a bounded loop");
    return ok;
  }();
  return has;
}

}  // namespace pyebpf::bpf
