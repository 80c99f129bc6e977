// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "binary/elf_file.hpp"
#include "procfs/maps.hpp"
#include "stack/frames.hpp"

namespace pyebpf::native {

// Parsed ELF files shared by every process that maps them, keyed by the
// file's identity (device, inode) as seen through /proc/PID/root, so a
// library mapped by many targets is read once. A file that cannot be read is
// remembered as such and not retried.
class ElfCache {
 public:
  std::shared_ptr<const binary::ElfFile> get(pid_t pid, const procfs::Mapping& mapping);
  std::size_t size() const { return files_.size(); }

 private:
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const binary::ElfFile>> files_;
};

// Names native (user-space) code addresses of one process: the executable
// mapping that holds the address (from /proc/PID/maps, re-read when an
// address falls outside every known mapping, at most once a second), then the
// function symbol of that file covering it (.symtab, or .dynsym only in
// stripped binaries): a Symbol frame with the module, else an InModule frame
// (module and offset) or an Address frame.
class NativeSymbolizer {
 public:
  NativeSymbolizer(pid_t pid, ElfCache& files);

  // `return_address`: the address is a return address (every frame but the
  // leaf): the call instruction it follows is what is named, which matters
  // when a call is the last instruction of a function.
  // The frame's views point into the ELF files and this symbolizer: valid
  // for as long as both live.
  stack::NativeFrame frame(std::uint64_t address, bool return_address);
  std::string name(std::uint64_t address, bool return_address) {
    return stack::text_of(frame(address, return_address));
  }

  std::uint64_t resolved() const { return resolved_; }
  std::uint64_t unresolved() const { return unresolved_; }

 private:
  const procfs::Mapping* mapping_of(std::uint64_t address);
  void refresh_maps();

  static constexpr std::size_t kMaxCached = 65536;

  pid_t pid_;
  ElfCache& files_;
  std::vector<procfs::Mapping> maps_;  // executable, file-backed, sorted by start
  std::chrono::steady_clock::time_point refreshed_{};
  std::unordered_map<std::uint64_t, stack::NativeFrame> cache_;
  std::set<std::string, std::less<>> modules_;  // base names the frames point into (few, never freed)
  std::uint64_t resolved_ = 0, unresolved_ = 0;
};

}  // namespace pyebpf::native
