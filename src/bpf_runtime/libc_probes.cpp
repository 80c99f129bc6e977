// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/libc_probes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>

#include "bpf_runtime/uprobe_links.hpp"
#include "common.h"
#include "native/libc.hpp"
#include "pyebpf/error.hpp"
#include "util/clock.hpp"

namespace pyebpf::bpf {

namespace {

// "read+7 (je 0x20)", "epoll_ctl+16 (jae 0x13, after the system call)",
// "close+0 (cmp byte ptr [rip + 0xe2bf1], 0; not emulated: single-stepped,
// a second trap per call)" where nothing the kernel emulates qualified; jump
// targets are relative to the function.
std::string describe(const std::string& function, const native::ProbeSite& site) {
  std::string what = site.instruction.empty() ? "not decoded" : site.instruction;
  if (site.after_syscall) what += ", after the system call";
  if (!site.emulated) what += "; not emulated: single-stepped, a second trap per call";
  return fmt::format("{}+{} ({})", function, site.offset, what);
}

std::vector<Link> attach_at(const LibcProbe& p, pid_t pid, const native::LibcFunction& f,
                            const native::ProbeSite& site) {
  const UprobeSite at{.offset = f.offset + site.offset,
                      .cookie = p.cookie | (site.after_syscall ? PYEBPF_COOKIE_AFTER_SYSCALL : 0)};
  return attach_process_uprobes(p.program, pid, f.open_path, {&at, 1}, p.retprobe);
}

}  // namespace

std::vector<Link> attach_libc_probes(pid_t pid, const std::vector<LibcProbe>& probes, const std::string& who) {
  std::vector<std::string> names;
  for (const auto& p : probes) {
    if (std::find(names.begin(), names.end(), p.function) == names.end()) names.emplace_back(p.function);
  }
  const std::uint64_t t0 = monotonic_ns();
  std::vector<std::string> unreadable;
  auto functions = native::libc_functions(pid, names, unreadable);
  const std::uint64_t t1 = monotonic_ns();
  std::uint64_t sites_ns = 0, attach_ns = 0, attach_max_ns = 0;
  std::size_t slowest = 0;
  std::vector<Link> links;
  std::set<std::string> files, sites;
  for (const auto& p : probes) {
    bool found = false;
    for (const auto& f : functions) {
      if (f.name != p.function) continue;
      found = true;
      files.insert(f.mapped_path);
      const std::uint64_t s0 = monotonic_ns();
      auto site = native::find_probe_site(f.code, p.needs);
      const std::uint64_t s1 = monotonic_ns();
      auto attached = attach_at(p, pid, f, site);
      const std::uint64_t s2 = monotonic_ns();
      sites_ns += s1 - s0;
      attach_ns += s2 - s1;
      if (s2 - s1 > attach_max_ns) {
        attach_max_ns = s2 - s1;
        slowest = links.size();
      }
      if (attached.empty() && site.offset != 0) {
        // A kernel that refuses the instruction there: the function's start, where the probe always went.
        site = {.instruction =
                    fmt::format("{} at +{} refused: {}", site.instruction, site.offset, std::strerror(errno))};
        attached = attach_at(p, pid, f, site);
      }
      sites.insert(describe(f.name, site));
      if (attached.empty())
        throw Error(errno_text(
            fmt::format("attach {} {} in {}", p.retprobe ? "uretprobe" : "uprobe", p.function, f.mapped_path), errno));
      std::move(attached.begin(), attached.end(), std::back_inserter(links));
    }
    if (!found && !unreadable.empty())
      throw Error(
          fmt::format("no C library function {} found; unreadable: {}", p.function, fmt::join(unreadable, "; ")),
          "check that the files named can be read by root (a container's root, a deleted library)");
    if (!found) throw Error(fmt::format("maps no C library function {} (a static, stripped executable?)", p.function));
  }
  spdlog::debug(
      "{}: pid {}: functions {:.2f} ms, sites {:.2f} ms, attach {:.2f} ms (slowest: uprobe {} of {}, {:.2f} ms)", who,
      pid, (t1 - t0) / 1e6, sites_ns / 1e6, attach_ns / 1e6, slowest + 1, links.size(), attach_max_ns / 1e6);
  spdlog::info("{}: pid {}: {} uprobes on {} in {}; sites: {}", who, pid, links.size(), fmt::join(names, ", "),
               fmt::join(files, ", "), fmt::join(sites, ", "));
  return links;
}

}  // namespace pyebpf::bpf
