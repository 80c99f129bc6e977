// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pyebpf::procfs {

// One line of /proc/PID/maps.
struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;  // file offset of `start`
  std::string perms;         // "r-xp"
  std::uint64_t inode = 0;
  std::string path;      // "" for anonymous mappings; " (deleted)" suffix removed
  bool deleted = false;  // the mapped file was unlinked (upgraded package, container layer)

  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool file_backed() const { return inode != 0 && !path.empty() && path[0] == '/'; }
};

// Parses the text of a maps file; malformed lines are skipped.
std::vector<Mapping> parse_maps(std::string_view text);

// Reads /proc/PID/maps; throws pyebpf::Error if the process is gone or unreadable.
std::vector<Mapping> read_maps(pid_t pid);

// Where to open a file mapped by `pid`, from this (possibly other) mount
// namespace: /proc/PID/root/<path>, or /proc/PID/map_files/<range> when the
// file was deleted after it was mapped.
std::string host_path(pid_t pid, const Mapping& mapping);

}  // namespace pyebpf::procfs
