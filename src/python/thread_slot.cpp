// SPDX-License-Identifier: Apache-2.0
#include "python/thread_slot.hpp"

#include <algorithm>
#include <cstring>

namespace pyebpf::python {
namespace {

// glibc's struct pthread is ~2.3 KiB with the TSD block at 0x310; search well past it.
constexpr std::size_t kSearchBytes = 0x1000;

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

}  // namespace

std::optional<std::int32_t> find_thread_state_slot(const ProcessMemory& memory,
                                                   const std::vector<ThreadStateRef>& threads) {
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

}  // namespace pyebpf::python
