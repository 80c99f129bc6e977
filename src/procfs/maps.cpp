// SPDX-License-Identifier: Apache-2.0
#include "procfs/maps.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "pyebpf/error.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace pyebpf::procfs {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

bool parse_hex(std::string_view text, std::uint64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_line(std::string_view line, Mapping& m) {
  std::string_view range = next_field(line);
  std::string_view perms = next_field(line);
  std::string_view offset = next_field(line);
  std::string_view dev = next_field(line);
  std::string_view inode = next_field(line);
  std::size_t dash = range.find('-');
  std::size_t colon = dev.find(':');
  if (dash == std::string_view::npos || perms.size() != 4 || colon == std::string_view::npos) return false;
  std::uint64_t major = 0, minor = 0;
  if (!parse_hex(range.substr(0, dash), m.start) || !parse_hex(range.substr(dash + 1), m.end) ||
      !parse_hex(offset, m.offset) || !parse_hex(dev.substr(0, colon), major) ||
      !parse_hex(dev.substr(colon + 1), minor))
    return false;
  m.dev = makedev(major, minor);
  auto [ptr, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
  if (ec != std::errc() || ptr != inode.data() + inode.size()) return false;
  m.perms = perms;
  std::size_t path_start = line.find_first_not_of(' ');
  std::string_view path = path_start == std::string_view::npos ? std::string_view{} : line.substr(path_start);
  m.deleted = path.size() > kDeletedSuffix.size() && path.ends_with(kDeletedSuffix);
  if (m.deleted) path.remove_suffix(kDeletedSuffix.size());
  m.path = path;
  return true;
}

}  // namespace

std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    Mapping m;
    if (parse_line(line, m)) out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mapping> read_maps(pid_t pid) {
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/maps");
  if (!text) {
    if (!process_exists(pid))
      throw Error("pid " + std::to_string(pid) + " does not exist",
                  "check the PID with `ps -p " + std::to_string(pid) + "`");
    throw Error("cannot read /proc/" + std::to_string(pid) + "/maps", "run pyebpf as root");
  }
  return parse_maps(*text);
}

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::string open_path(pid_t pid, const Mapping& mapping) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (!mapping.deleted) {
    const FileId mapped{mapping.dev, mapping.inode};
    for (std::string candidate : {proc + "/root" + mapping.path, mapping.path}) {
      if (file_id(candidate) == mapped) return candidate;
    }
  }
  char range[64];
  std::snprintf(range, sizeof(range), "%lx-%lx", static_cast<unsigned long>(mapping.start),
                static_cast<unsigned long>(mapping.end));
  return proc + "/map_files/" + range;
}

std::string target_path(pid_t pid, const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/root").c_str(), buf, sizeof(buf) - 1);
  if (n <= 1) return path;  // "/" (host, or a root pyebpf cannot see), or unreadable
  std::string root(buf, static_cast<std::size_t>(n));
  if (path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/') return path.substr(root.size());
  return path;
}

}  // namespace pyebpf::procfs
