// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "procfs/maps.hpp"

namespace pyebpf::native {

// Rank of a mapped file's name as a C library, most specific first, or -1 if
// it is none: glibc < 2.34 keeps its own copies of pthread_* and of the
// cancellable system call wrappers (read, recv, accept, close...) in
// libpthread, which CPython links before libc (0); then libc itself, glibc or
// musl (1).
int c_library_rank(const std::string& file_name);

// The C libraries `pid` maps, one mapping each, most specific first. Throws
// pyebpf::Error if /proc/PID/maps cannot be read.
std::vector<procfs::Mapping> c_libraries(pid_t pid);

// A C library function as one process maps it: where a uprobe on it goes.
struct LibcFunction {
  std::string name;          // "accept4"
  std::string open_path;     // the file as pyebpf opens it (procfs::open_path)
  std::string mapped_path;   // the file as the process sees it (procfs::target_path)
  std::uint64_t offset = 0;  // file offset of the function's first instruction
  // Its code, the symbol's whole size (none if the size is unknown or over
  // kMaxCodeBytes): where native::find_probe_site looks for a cheaper place
  // than offset 0, and checks that nothing jumps back before it.
  std::vector<std::uint8_t> code;
};

inline constexpr std::size_t kMaxCodeBytes = 4096;

// Where each of `names` starts in `pid`: in every C library it maps that
// defines it, and in its executable if that defines it too (a static build
// carries its own C library). A call may land in any of these copies (old
// glibc's libpthread wrappers serve the calls bound to them, libc's the
// rest), so a probe belongs in each. Files that cannot be read are skipped,
// each with its error in `unreadable` (a caller that finds a function
// missing must say why, not guess). Throws pyebpf::Error if /proc/PID/maps
// cannot be read.
std::vector<LibcFunction> libc_functions(pid_t pid, const std::vector<std::string>& names,
                                         std::vector<std::string>& unreadable);

// A C library or executable to look in: the path pyebpf opens, the one the target maps.
struct LibcFile {
  std::string open_path, mapped_path;
};
// libc_functions() over given files.
std::vector<LibcFunction> libc_functions_in(const std::vector<LibcFile>& files, const std::vector<std::string>& names,
                                            std::vector<std::string>& unreadable);

}  // namespace pyebpf::native
