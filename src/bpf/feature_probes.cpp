// SPDX-License-Identifier: Apache-2.0
#include "bpf/feature_probes.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "pyebpf/fd.hpp"

namespace pyebpf::bpf {
namespace {

struct BtfDeleter {
  void operator()(btf* b) const noexcept { btf__free(b); }
};

// The kernel's own BTF, parsed once (tens of milliseconds each time).
const btf* vmlinux_btf() {
  static const std::unique_ptr<btf, BtfDeleter> cached = [] {
    btf* b = btf__load_vmlinux_btf();
    if (!b) spdlog::debug("feature probes: no kernel BTF: {}", std::strerror(errno));
    return std::unique_ptr<btf, BtfDeleter>(b);
  }();
  return cached.get();
}

int tracepoint_btf_id(const char* name) {
  const btf* b = vmlinux_btf();
  if (!b) return -1;
  return btf__find_by_name_kind(b, (std::string("btf_trace_") + name).c_str(), BTF_KIND_TYPEDEF);
}

}  // namespace

bool kernel_has_tracepoint(const char* name) { return tracepoint_btf_id(name) > 0; }

bool probe_tp_btf(const char* tracepoint) {
  int btf_id = tracepoint_btf_id(tracepoint);
  if (btf_id <= 0) {
    spdlog::debug("probe tp_btf/{}: the kernel BTF does not describe it", tracepoint);
    return false;
  }
  // r0 = 0; exit
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
              .attach_btf_id = static_cast<__u32>(btf_id));
  Fd fd(bpf_prog_load(BPF_PROG_TYPE_TRACING, nullptr, "GPL", insns, 2, &opts));
  if (!fd) spdlog::debug("probe tp_btf/{}: load failed: {}", tracepoint, std::strerror(errno));
  return static_cast<bool>(fd);
}

}  // namespace pyebpf::bpf
