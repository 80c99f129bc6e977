// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace pyebpf::python {

// Reads another process's memory with process_vm_readv: no ptrace stop, no
// file descriptor kept open. Every read can fail (the target mutates or exits
// concurrently); callers treat a failed read as "unknown", never as fatal.
class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  pid_t pid() const { return pid_; }

  // True only if all `len` bytes were read.
  bool read(std::uint64_t addr, void* out, std::size_t len) const;

  template <typename T>
  std::optional<T> read_value(std::uint64_t addr) const {
    T value;
    if (!read(addr, &value, sizeof(value))) return std::nullopt;
    return value;
  }
  std::optional<std::uint64_t> read_u64(std::uint64_t addr) const { return read_value<std::uint64_t>(addr); }

  // `len` bytes, or nullopt if any of them is unreadable.
  std::optional<std::vector<std::uint8_t>> read_bytes(std::uint64_t addr, std::size_t len) const;

 private:
  pid_t pid_;
};

}  // namespace pyebpf::python
