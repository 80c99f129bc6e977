// SPDX-License-Identifier: Apache-2.0
#include "app/system_checks.hpp"

#include <linux/capability.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

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

// The Python frame walk is a global BPF function (bpf/python.bpf.h), and
// global functions with pointer arguments came in Linux 5.12. Distribution
// kernels may carry them earlier (backports), so an older version is warned
// about, not refused: the trackers that walk stacks then fail to load alone.
void warn_if_kernel_older_than_5_12() {
  utsname u{};
  unsigned major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) return;
  if (major < 5 || (major == 5 && minor < 12))
    spdlog::warn(
        "Linux {}: trackers that walk Python stacks need Linux >= 5.12 (global BPF functions with pointer "
        "arguments) and may fail to load; the others run",
        u.release);
}

}  // namespace

void check_system() {
  bool privileged =
      geteuid() == 0 || (has_capability(CAP_BPF) && has_capability(CAP_PERFMON) && has_capability(CAP_SYS_PTRACE));
  if (!privileged) throw Error("pyebpf needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)", "run it with sudo");
  if (!path_exists("/sys/kernel/btf/vmlinux"))
    throw Error("this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing)",
                "pyebpf needs Linux >= 5.12 built with CONFIG_DEBUG_INFO_BTF=y");
  warn_if_kernel_older_than_5_12();
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
