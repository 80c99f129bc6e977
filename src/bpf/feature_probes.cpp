// SPDX-License-Identifier: Apache-2.0
#include "bpf/feature_probes.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "pyebpf/fd.hpp"

namespace pyebpf::bpf {

bool probe_tp_btf(const char* tracepoint) {
  int btf_id = libbpf_find_vmlinux_btf_id(tracepoint, BPF_TRACE_RAW_TP);
  if (btf_id < 0) {
    spdlog::debug("probe tp_btf/{}: no BTF type for it: {}", tracepoint, std::strerror(-btf_id));
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
