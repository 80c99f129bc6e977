// SPDX-License-Identifier: Apache-2.0
#include "python/thread_slot.hpp"

#include <algorithm>
#include <cstring>

namespace pyebpf::python {
namespace {

// glibc's struct pthread is ~2.3 KiB with the TSD block at 0x310; search well past it.
constexpr std::size_t kSearchBytes = 0x1000;
// Static TLS blocks lie below the thread pointer (x86-64 TLS variant II).
constexpr std::int32_t kMaxTlsOffset = 1 << 20;

std::vector<std::int32_t> offsets_holding(const ProcessMemory& memory, const ThreadStateRef& t) {
  std::vector<std::int32_t> out;
  std::vector<std::uint8_t> block(kSearchBytes);
  if (!memory.read(t.thread_id, block.data(), block.size())) return out;
  for (std::size_t off = 0; off + 8 <= block.size(); off += 8) {
    std::uint64_t value;
    std::memcpy(&value, block.data() + off, 8);
    if (value == t.tstate) out.push_back(static_cast<std::int32_t>(off));
  }
  return out;
}

bool every_thread_holds_its_state(const ProcessMemory& memory, const std::vector<ThreadStateRef>& threads,
                                  std::int32_t offset) {
  bool any = false;
  for (const auto& t : threads) {
    if (!t.tstate || !t.thread_id) continue;
    if (memory.read_u64(t.thread_id + static_cast<std::uint64_t>(static_cast<std::int64_t>(offset))) != t.tstate)
      return false;
    any = true;
  }
  return any;
}

}  // namespace

std::optional<std::int32_t> find_thread_state_slot(const ProcessMemory& memory,
                                                   const std::vector<ThreadStateRef>& threads,
                                                   std::optional<std::int32_t> gilstate_tls) {
  if (gilstate_tls) {
    if (every_thread_holds_its_state(memory, threads, *gilstate_tls)) return gilstate_tls;
    return std::nullopt;
  }
  std::optional<std::vector<std::int32_t>> common;
  for (const auto& t : threads) {
    if (!t.tstate || !t.thread_id) continue;
    auto here = offsets_holding(memory, t);
    if (!common) {
      common = std::move(here);
    } else {
      std::vector<std::int32_t> both;
      std::set_intersection(common->begin(), common->end(), here.begin(), here.end(), std::back_inserter(both));
      *common = std::move(both);
    }
  }
  if (!common || common->size() != 1) return std::nullopt;
  return common->front();
}

std::optional<std::int32_t> decode_tls_load(std::span<const std::uint8_t> code) {
  static constexpr std::uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (code.size() >= 4 && std::equal(code.begin(), code.begin() + 4, kEndbr64)) code = code.subspan(4);
  // 64 = %fs segment override, REX.W (48, or 4c for %r8-%r15), 8b = mov r64, r/m64;
  // ModRM 00 reg 100 + SIB 25 = an absolute disp32 with no base or index.
  if (code.size() < 9 || code[0] != 0x64 || (code[1] != 0x48 && code[1] != 0x4c) || code[2] != 0x8b ||
      (code[3] & 0xc7) != 0x04 || code[4] != 0x25)
    return std::nullopt;
  std::int32_t disp;
  std::memcpy(&disp, code.data() + 5, 4);
  if (disp >= 0 || disp < -kMaxTlsOffset || disp % 8 != 0) return std::nullopt;
  return disp;
}

}  // namespace pyebpf::python
