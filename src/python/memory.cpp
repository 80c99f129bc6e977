// SPDX-License-Identifier: Apache-2.0
#include "python/memory.hpp"

#include <sys/uio.h>

namespace pyebpf::python {

bool ProcessMemory::read(std::uint64_t addr, void* out, std::size_t len) const {
  if (len == 0) return true;
  if (addr == 0) return false;
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(len);
}

std::optional<std::vector<std::uint8_t>> ProcessMemory::read_bytes(std::uint64_t addr, std::size_t len) const {
  std::vector<std::uint8_t> buf(len);
  if (!read(addr, buf.data(), len)) return std::nullopt;
  return buf;
}

}  // namespace pyebpf::python
