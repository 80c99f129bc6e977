// SPDX-License-Identifier: Apache-2.0
#include "app/lifecycle.hpp"

#include <bpf/bpf.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "lifecycle.skel.h"
#include "pyebpf/error.hpp"
#include "trackers/common/bpf_counters.hpp"

namespace pyebpf::app {

ProcessLifecycle::ProcessLifecycle(const bpf::SharedMaps& shared, bool follow_children, const std::string& needle,
                                   bool all_execs, Handler handler)
    : handler_(std::move(handler)) {
  skel_ = bpf::Skeleton<lifecycle_bpf>("lifecycle", {lifecycle_bpf__open, lifecycle_bpf__load, lifecycle_bpf__destroy});
  skel_->rodata->targ_follow_children = follow_children;
  skel_->rodata->targ_all_execs = all_execs;
  const std::size_t n = std::min(needle.size(), sizeof(skel_->rodata->targ_needle));
  std::memcpy(const_cast<char*>(skel_->rodata->targ_needle), needle.data(), n);
  skel_->rodata->targ_needle_len = static_cast<std::uint32_t>(n);
  skel_.load(shared);
  for (bpf_program* prog : {skel_->progs.lifecycle_fork, skel_->progs.lifecycle_exec, skel_->progs.lifecycle_exit}) {
    bpf::Link link(bpf_program__attach(prog));
    if (!link)
      throw Error(errno_text(std::string("lifecycle: attach ") + bpf_program__section_name(prog), errno),
                  "pyebpf needs BTF-enabled tracepoints (CONFIG_DEBUG_INFO_BTF)");
    links_.push_back(std::move(link));
  }
  events_.emplace(
      skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "lifecycle");
}

ProcessLifecycle::~ProcessLifecycle() = default;

std::uint32_t ProcessLifecycle::track(pid_t pid) const {
  const int fd = bpf_map__fd(skel_->maps.lineage);
  __u32 key = static_cast<__u32>(pid), execs = 0;
  if (bpf_map_update_elem(fd, &key, &execs, BPF_NOEXIST) && errno != EEXIST)
    spdlog::warn("pid {}: its new processes are not followed: {}", pid, errno_text("lineage map", errno));
  bpf_map_lookup_elem(fd, &key, &execs);
  return execs;
}

void ProcessLifecycle::untrack(pid_t pid) const {
  __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.lineage), &key);
}

int ProcessLifecycle::wait_fd() const {
  return events_->wait_fds().front();
}

void ProcessLifecycle::consume() {
  events_->consume();
}

void ProcessLifecycle::handle(const void* data, std::size_t size) {
  pyebpf_lifecycle_event ev;
  if (size < sizeof(ev)) {
    ++malformed_;
    return;
  }
  std::memcpy(&ev, data, sizeof(ev));
  handler_({static_cast<pyebpf_lifecycle_kind>(ev.kind), static_cast<pid_t>(ev.pid), static_cast<pid_t>(ev.parent),
            (ev.flags & PYEBPF_LIFECYCLE_TRACKED) != 0, (ev.flags & PYEBPF_LIFECYCLE_NEEDLE) != 0, ev.ts_ns,
            std::string(ev.comm, strnlen(ev.comm, sizeof(ev.comm)))});
}

std::string ProcessLifecycle::summary() const {
  trackers::Counters c = trackers::read_counters(skel_->maps.counters);
  return fmt::format(
      "processes followed: {} forks and {} execs of targets' lineages or --name matches seen, {} lost (ring buffer "
      "full){}, {} children not followed (lineage map full)",
      c[PYEBPF_LIFECYCLE_CNT_FORKS], c[PYEBPF_LIFECYCLE_CNT_EXECS], c[PYEBPF_CNT_RINGBUF_FULL],
      trackers::malformed_note(malformed_), c[PYEBPF_LIFECYCLE_CNT_LINEAGE_FULL]);
}

}  // namespace pyebpf::app
