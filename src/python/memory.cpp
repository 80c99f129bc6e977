// SPDX-License-Identifier: Apache-2.0
#include "python/memory.hpp"

#include <sys/uio.h>

#include <atomic>

namespace pyebpf::python {
namespace {

std::atomic<std::uint64_t> reads{0};

}  // namespace

std::uint64_t ProcessMemory::reads_made() {
  return reads.load(std::memory_order_relaxed);
}

bool ProcessMemory::read_direct(std::uint64_t addr, void* out, std::size_t len) const {
  reads.fetch_add(1, std::memory_order_relaxed);
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(len);
}

bool ProcessMemory::read(std::uint64_t addr, void* out, std::size_t len) const {
  if (len == 0) return true;
  if (addr == 0 || addr + len < addr) return false;
  if (len <= kChunk) {
    std::lock_guard lock(mutex_);
    if (batches_ && batch_thread_ == std::this_thread::get_id()) return read_chunked(addr, out, len);
  }
  return read_direct(addr, out, len);
}

bool ProcessMemory::read_chunked(std::uint64_t addr, void* out, std::size_t len) const {
  auto* dst = static_cast<std::uint8_t*>(out);
  for (std::uint64_t at = addr, end = addr + len; at < end;) {
    const std::uint64_t base = at & ~std::uint64_t{kChunk - 1};
    auto it = chunks_.find(base);
    if (it == chunks_.end()) {
      if (chunks_.size() >= kMaxChunks) chunks_.clear();
      std::array<std::uint8_t, kChunk> chunk;
      it = chunks_.emplace(base, std::nullopt).first;
      if (read_direct(base, chunk.data(), kChunk)) it->second = chunk;
    }
    if (!it->second) return false;
    const std::uint64_t take = std::min<std::uint64_t>(end, base + kChunk) - at;
    std::memcpy(dst, it->second->data() + (at - base), take);
    dst += take;
    at += take;
  }
  return true;
}

std::optional<std::vector<std::uint8_t>> ProcessMemory::read_bytes(std::uint64_t addr, std::size_t len) const {
  std::vector<std::uint8_t> buf(len);
  if (!read(addr, buf.data(), len)) return std::nullopt;
  return buf;
}

ProcessMemory::Batch::Batch(const ProcessMemory& memory) : memory_(memory) {
  std::lock_guard lock(memory_.mutex_);
  active_ = memory_.batches_ == 0 || memory_.batch_thread_ == std::this_thread::get_id();
  if (!active_) return;
  if (memory_.batches_++ == 0) memory_.batch_thread_ = std::this_thread::get_id();
}

ProcessMemory::Batch::~Batch() {
  if (!active_) return;
  std::lock_guard lock(memory_.mutex_);
  if (--memory_.batches_ == 0) memory_.chunks_.clear();
}

}  // namespace pyebpf::python
