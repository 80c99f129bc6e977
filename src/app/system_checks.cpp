// SPDX-License-Identifier: Apache-2.0
#include "app/system_checks.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/files.hpp"

namespace pyebpf::app {
namespace {

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

bool has_capability(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

}  // namespace

void check_system() {
  bool privileged =
      geteuid() == 0 || (has_capability(CAP_BPF) && has_capability(CAP_PERFMON) && has_capability(CAP_SYS_PTRACE));
  if (!privileged) throw Error("pyebpf needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)", "run it with sudo");
  if (!path_exists("/sys/kernel/btf/vmlinux"))
    throw Error("this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing)",
                "pyebpf needs Linux >= 5.8 built with CONFIG_DEBUG_INFO_BTF=y");
  rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &unlimited);  // best effort: only kernels < 5.11 need it
  // Every uprobe link holds descriptors, and a recycling server's exited
  // workers' links wait to be detached (bpf_runtime/detach.hpp): a soft limit of
  // 1024 would make attaching the next worker fail. Best effort.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

}  // namespace pyebpf::app
