// SPDX-License-Identifier: Apache-2.0
#include "bpf/features.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace pyebpf::bpf {
namespace {

struct BtfDeleter {
  void operator()(btf* b) const noexcept { btf__free(b); }
};

const btf* vmlinux_btf() {
  static std::unique_ptr<btf, BtfDeleter> cached(btf__load_vmlinux_btf());
  return cached.get();
}

}  // namespace

bool kernel_has_bpf_loop() {
  static const bool has = [] {
    bool ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr) == 1;
    spdlog::debug("kernel {} bpf_loop: Python frame walks use {}", ok ? "has" : "lacks",
                  ok ? "bpf_loop" : "a bounded loop");
    return ok;
  }();
  return has;
}

bool kernel_has_btf_tracepoint(const char* name) {
  const btf* b = vmlinux_btf();
  if (!b) return false;
  std::string type = std::string("btf_trace_") + name;
  return btf__find_by_name_kind(b, type.c_str(), BTF_KIND_TYPEDEF) > 0;
}

}  // namespace pyebpf::bpf
