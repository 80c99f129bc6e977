// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
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
  std::uint64_t dev = 0;     // makedev(major, minor) of the file's device
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

// Where pyebpf opens the file `mapping` maps in `pid`, so that the file opened
// is the mapped one in every root set-up. maps shows a path as seen from
// pyebpf's own root, where that is reachable, else from the target's:
//  1. /proc/PID/root/<path>: a container (own mount namespace), or the host;
//  2. <path> itself: a plain chroot in pyebpf's mount namespace (1. would
//     prefix the chroot directory twice);
// each taken only if stat() finds the device and inode maps shows; else
//  3. /proc/PID/map_files/<range>, the mapped file itself (deleted since, or
//     on a file system such as overlayfs whose stat() numbers differ).
std::string open_path(pid_t pid, const Mapping& mapping);

// `path` (from maps) as the target sees it: without the directory a plain
// chroot put its root in. Unchanged for containers and host processes.
std::string target_path(pid_t pid, const std::string& path);

// The device and inode of `path`, if it exists.
struct FileId {
  std::uint64_t dev = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileId&) const = default;
};
std::optional<FileId> file_id(const std::string& path);

}  // namespace pyebpf::procfs
