// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "binary/elf_file.hpp"
#include "procfs/maps.hpp"
#include "python/version.hpp"

namespace pyebpf::python {

// The CPython runtime found in one process: which mapped ELF file holds
// _PyRuntime (the python executable when statically linked, libpython when
// shared), where it is loaded, and which version it is.
struct Interpreter {
  std::string mapped_path;  // path as the target sees it
  std::string open_path;    // path pyebpf opens it by (procfs::open_path)
  binary::ElfFile elf;
  std::uint64_t load_bias = 0;  // runtime address = load_bias + st_value
  PyVersion version;
  std::string version_source;      // "Py_Version symbol", "file name"
  std::uint64_t runtime_addr = 0;  // &_PyRuntime
  std::uint64_t runtime_size = 0;  // st_size of _PyRuntime

  std::string file_name() const;  // basename of mapped_path
  // Runtime address of a defined symbol of this ELF file.
  std::optional<std::uint64_t> symbol_address(std::string_view name) const;
};

// Finds the interpreter in `pid`. Throws pyebpf::Error with a one-line reason
// (no such process, not a CPython process, unreadable binary) otherwise. A
// Python too old to have _PyRuntime (<= 3.6) is returned with runtime_addr 0
// and the version from its file name, so the caller can name what it does not
// support.
Interpreter discover_interpreter(pid_t pid);

// Load bias of `elf` as mapped in `maps` under `maps_path` (the path maps
// shows): the difference between where a PT_LOAD segment is mapped and its
// p_vaddr. 0 for non-PIE executables, the mapping base for shared objects.
std::optional<std::uint64_t> load_bias(const binary::ElfFile& elf, const std::vector<procfs::Mapping>& maps,
                                       const std::string& maps_path);

}  // namespace pyebpf::python
