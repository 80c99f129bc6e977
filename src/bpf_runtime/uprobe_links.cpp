// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/uprobe_links.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace pyebpf::bpf {
namespace {

// BPF_LINK_CREATE's attributes for a uprobe_multi link (uapi linux/bpf.h of
// Linux 6.6); Debian 12's headers and libbpf predate them.
constexpr __u32 kTraceUprobeMulti = 48;        // BPF_TRACE_UPROBE_MULTI
constexpr __u32 kUprobeMultiReturn = 1U << 0;  // BPF_F_UPROBE_MULTI_RETURN

struct UprobeMultiLinkAttr {
  __u32 prog_fd;
  __u32 target_fd;
  __u32 attach_type;
  __u32 flags;
  __aligned_u64 path;
  __aligned_u64 offsets;
  __aligned_u64 ref_ctr_offsets;
  __aligned_u64 cookies;
  __u32 cnt;
  __u32 multi_flags;
  __u32 pid;
};

int create_uprobe_multi_link(int prog_fd, const char* path, const __u64* offsets, const __u64* cookies,
                             std::size_t count, bool retprobe, pid_t pid) {
  UprobeMultiLinkAttr attr{};
  attr.prog_fd = static_cast<__u32>(prog_fd);
  attr.attach_type = kTraceUprobeMulti;
  attr.path = reinterpret_cast<__u64>(path);
  attr.offsets = reinterpret_cast<__u64>(offsets);
  attr.cookies = reinterpret_cast<__u64>(cookies);
  attr.cnt = static_cast<__u32>(count);
  attr.multi_flags = retprobe ? kUprobeMultiReturn : 0;
  attr.pid = static_cast<__u32>(pid);
  return static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr)));
}

bool probe_uprobe_multi() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // exit
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kTraceUprobeMulti));
  Fd prog(bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts));
  if (!prog) return false;
  // A kernel with uprobe_multi refuses "/" for not being a regular file; one
  // without refuses the attach type itself (EINVAL).
  const __u64 offset = 0;
  Fd link(create_uprobe_multi_link(prog.get(), "/", &offset, nullptr, 1, false, 0));
  return !link && errno == EBADF;
}

}  // namespace

bool kernel_has_uprobe_multi() {
  static const bool has = [] {
    // PYEBPF_UPROBE_LINKS=perf-event: the links of kernels before 6.6, so
    // tests run that path on newer kernels too (docs/design.md).
    const char* links = std::getenv("PYEBPF_UPROBE_LINKS");
    const bool forced = links && std::string_view(links) == "perf-event";
    const bool ok = !forced && probe_uprobe_multi();
    spdlog::info("per-process uprobes attach {}",
                 ok       ? "one uprobe_multi link per program and file"
                 : forced ? "one perf event per site (PYEBPF_UPROBE_LINKS)"
                          : "one perf event per site (the kernel has no uprobe_multi links)");
    return ok;
  }();
  return has;
}

void prepare_process_uprobes(bpf_object* object) {
  bpf_program* program;
  bpf_object__for_each_program(program, object) {
    const char* section = bpf_program__section_name(program);
    bool per_process = !std::strcmp(section, "uprobe") || !std::strcmp(section, "uretprobe");
    if (per_process && kernel_has_uprobe_multi())
      bpf_program__set_expected_attach_type(program, static_cast<bpf_attach_type>(kTraceUprobeMulti));
  }
}

std::vector<Link> attach_process_uprobes(bpf_program* program, pid_t pid, const std::string& path,
                                         std::span<const UprobeSite> sites, bool retprobe) {
  std::vector<Link> links;
  if (bpf_program__expected_attach_type(program) == static_cast<bpf_attach_type>(kTraceUprobeMulti)) {
    std::vector<__u64> offsets, cookies;
    for (const auto& site : sites) {
      offsets.push_back(site.offset);
      cookies.push_back(site.cookie);
    }
    Fd link(create_uprobe_multi_link(bpf_program__fd(program), path.c_str(), offsets.data(), cookies.data(),
                                     sites.size(), retprobe, pid));
    if (link) links.emplace_back(std::move(link));
    return links;
  }
  for (const auto& site : sites) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = retprobe);
    Link link(bpf_program__attach_uprobe_opts(program, pid, path.c_str(), site.offset, &opts));
    if (!link) {
      const int saved = errno;
      links.clear();  // detaching may change errno
      errno = saved;
      return links;
    }
    links.push_back(std::move(link));
  }
  return links;
}

}  // namespace pyebpf::bpf
