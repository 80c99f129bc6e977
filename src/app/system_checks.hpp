// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::app {

// Fails with a one-line pyebpf::Error when the host cannot run pyebpf:
// missing privileges (root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE for reading
// targets' memory) or a kernel without BTF. Also lifts RLIMIT_MEMLOCK for
// kernels that still charge BPF maps to it (< 5.11).
void check_system();

}  // namespace pyebpf::app
