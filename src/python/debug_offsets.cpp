// SPDX-License-Identifier: Apache-2.0
#include "python/debug_offsets.hpp"

#include <cstring>

namespace pyebpf::python {
namespace {

constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
// A sane upper bound for any struct offset or size; larger means garbage.
constexpr std::uint64_t kMaxValue = 1 << 24;

std::optional<std::uint64_t> u64_at(std::span<const std::uint8_t> raw, std::uint32_t at) {
  if (std::uint64_t{at} + 8 > raw.size()) return std::nullopt;
  std::uint64_t v;
  std::memcpy(&v, raw.data() + at, 8);
  return v;
}

std::optional<std::uint64_t> value_at(std::span<const std::uint8_t> raw, std::uint32_t at) {
  auto v = u64_at(raw, at);
  if (v && *v > kMaxValue) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> apply_debug_offsets(OffsetsRow& row, const ProcessMemory& memory, std::uint64_t runtime_addr,
                                               const PyVersion& version) {
  if (!row.debug_offsets) return std::nullopt;
  auto raw = memory.read_bytes(runtime_addr, row.debug_offsets->size);
  if (!raw) return std::nullopt;
  return apply_debug_offsets(row, *raw, version);
}

std::optional<std::string> apply_debug_offsets(OffsetsRow& row, std::span<const std::uint8_t> raw,
                                               const PyVersion& version) {
  if (!row.debug_offsets) return std::nullopt;
  const DebugOffsetsLayout& layout = *row.debug_offsets;
  if (std::uint64_t{layout.cookie_at} + sizeof(kCookie) > raw.size() ||
      std::memcmp(raw.data() + layout.cookie_at, kCookie, sizeof(kCookie)) != 0)
    return std::nullopt;
  auto hex = u64_at(raw, layout.version_at);
  if (!hex) return std::nullopt;
  if (((*hex >> 24) & 0xff) != static_cast<std::uint64_t>(version.major) ||
      ((*hex >> 16) & 0xff) != static_cast<std::uint64_t>(version.minor))
    return std::nullopt;

  // Validate everything before changing anything: all or nothing.
  std::map<std::string, std::uint64_t, std::less<>> fields, sizes;
  for (const auto& [name, at] : layout.fields) {
    auto v = value_at(raw, at);
    if (!v) return std::nullopt;
    fields[name] = *v;
  }
  for (const auto& [name, at] : layout.sizes) {
    auto v = value_at(raw, at);
    if (!v) return std::nullopt;
    sizes[name] = *v;
  }
  std::string moved;
  for (const auto& [name, v] : fields) {
    auto old = row.field(name);
    if (old && *old != v) moved += " " + name + " " + std::to_string(*old) + "->" + std::to_string(v);
    row.fields[name] = static_cast<std::uint32_t>(v);
  }
  for (const auto& [name, v] : sizes) {
    auto old = row.size(name);
    if (old && *old != v) moved += " sizeof(" + name + ") " + std::to_string(*old) + "->" + std::to_string(v);
    row.sizes[name] = v;
  }
  std::string text = "_Py_DebugOffsets of the target (" + std::to_string(fields.size() + sizes.size()) +
                     " values), table row " + row.minor + " for the rest";
  if (!moved.empty()) text += "; differs from the table:" + moved;
  return text;
}

}  // namespace pyebpf::python
