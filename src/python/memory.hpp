// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pyebpf::python {

// Reads another process's memory with process_vm_readv: no ptrace stop, no
// file descriptor kept open. Every read can fail (the target mutates or exits
// concurrently); callers treat a failed read as "unknown", never as fatal.
class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;
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

  // System calls that read some target's memory, by every ProcessMemory of
  // this process since it started: the end-of-run summary reports them, so a
  // per-event read (the cost issue 31 found) shows as reads per event.
  static std::uint64_t reads_made();

  // `len` bytes, or nullopt if any of them is unreadable.
  std::optional<std::vector<std::uint8_t>> read_bytes(std::uint64_t addr, std::size_t len) const;

  // While a Batch lives, small reads made by the thread that opened it come
  // from aligned chunks, each read from the target once. Reading objects
  // field by field costs one system call per field (~3 µs on a VM), and one
  // pass over 500 threading.Thread objects made ~35,000 of them for the
  // same type object, shared keys table and interned key strings again and
  // again. The target runs on meanwhile, so a Batch is for one short pass
  // (a re-read of thread names, one code object): its reads are as if all
  // made when each chunk was first read. Batches nest; other threads' reads
  // are not cached.
  class Batch {
   public:
    explicit Batch(const ProcessMemory& memory);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    const ProcessMemory& memory_;
    bool active_;
  };

 private:
  // A chunk never crosses a page, so it is readable as a whole or not at all.
  static constexpr std::size_t kChunk = 256;
  static constexpr std::size_t kMaxChunks = 4096;  // 1 MiB
  bool read_direct(std::uint64_t addr, void* out, std::size_t len) const;
  bool read_chunked(std::uint64_t addr, void* out, std::size_t len) const;

  pid_t pid_;
  mutable std::mutex mutex_;  // guards the batch state below
  mutable int batches_ = 0;
  mutable std::thread::id batch_thread_;
  mutable std::unordered_map<std::uint64_t, std::optional<std::array<std::uint8_t, kChunk>>> chunks_;
};

}  // namespace pyebpf::python
