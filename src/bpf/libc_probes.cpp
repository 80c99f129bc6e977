// SPDX-License-Identifier: Apache-2.0
#include "bpf/libc_probes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "native/libc.hpp"
#include "pyebpf/error.hpp"

namespace pyebpf::bpf {

namespace {

std::vector<Link> attach(pid_t pid, const std::vector<LibcProbe>& probes, const std::string& who) {
  std::vector<std::string> names;
  for (const auto& p : probes) {
    if (std::find(names.begin(), names.end(), p.function) == names.end()) names.emplace_back(p.function);
  }
  auto functions = native::libc_functions(pid, names);
  std::vector<Link> links;
  std::set<std::string> files;
  for (const auto& p : probes) {
    bool found = false;
    for (const auto& f : functions) {
      if (f.name != p.function) continue;
      found = true;
      files.insert(f.mapped_path);
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = p.cookie, .retprobe = p.retprobe);
      Link link(bpf_program__attach_uprobe_opts(p.program, pid, f.open_path.c_str(), f.offset, &opts));
      if (!link)
        throw Error(errno_text(fmt::format("{}: attach {} {} in {} (pid {})", who, p.retprobe ? "uretprobe" : "uprobe",
                                           p.function, f.mapped_path, pid),
                               errno));
      links.push_back(std::move(link));
    }
    if (!found)
      throw Error(fmt::format("{}: pid {} maps no C library function {} (a static, stripped executable?)", who, pid,
                              p.function));
  }
  spdlog::info("{}: pid {}: {} uprobes on {} in {}", who, pid, links.size(), fmt::join(names, ", "),
               fmt::join(files, ", "));
  return links;
}

}  // namespace

std::optional<std::vector<Link>> attach_libc_probes(pid_t pid, const std::vector<LibcProbe>& probes,
                                                    const std::string& who, const std::string& consequence) {
  try {
    return attach(pid, probes, who);
  } catch (const Error& e) {
    spdlog::warn("{}: {}", e.what(), consequence);
    return std::nullopt;
  }
}

}  // namespace pyebpf::bpf
