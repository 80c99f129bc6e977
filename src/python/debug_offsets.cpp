// SPDX-License-Identifier: Apache-2.0
#include "python/debug_offsets.hpp"

#include <cstring>

namespace pyebpf::python {
namespace {

constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
// A sane upper bound for any struct offset or size; larger means garbage.
constexpr std::uint64_t kMaxValue = 1 << 24;

std::uint64_t u64_at(std::span<const std::uint8_t> raw, std::uint32_t at) {
  std::uint64_t v = 0;
  if (std::uint64_t{at} + 8 <= raw.size()) std::memcpy(&v, raw.data() + at, 8);
  return v;
}

DebugOffsetsResult invalid(std::string why) {
  return {DebugOffsetsStatus::Invalid, std::move(why)};
}

}  // namespace

DebugOffsetsResult apply_debug_offsets(OffsetsRow& row, const ProcessMemory& memory, std::uint64_t runtime_addr,
                                       std::uint64_t runtime_size, const PyVersion& version) {
  if (!row.debug_offsets) return {DebugOffsetsStatus::NotInRow, {}};
  auto raw = memory.read_bytes(runtime_addr, row.debug_offsets->size);
  if (!raw) return invalid("_PyRuntime is unreadable");
  return apply_debug_offsets(row, *raw, runtime_size, version);
}

DebugOffsetsResult apply_debug_offsets(OffsetsRow& row, std::span<const std::uint8_t> raw, std::uint64_t runtime_size,
                                       const PyVersion& version) {
  if (!row.debug_offsets) return {DebugOffsetsStatus::NotInRow, {}};
  const DebugOffsetsLayout& layout = *row.debug_offsets;
  if (raw.size() < layout.size || std::uint64_t{layout.cookie_at} + sizeof(kCookie) > raw.size())
    return invalid("_PyRuntime is shorter than _Py_DebugOffsets");
  if (std::memcmp(raw.data() + layout.cookie_at, kCookie, sizeof(kCookie)) != 0)
    return invalid("_PyRuntime does not start with _Py_DebugOffsets (no \"xdebugpy\" cookie)");
  std::uint64_t hex = u64_at(raw, layout.version_at);
  if (((hex >> 24) & 0xff) != static_cast<std::uint64_t>(version.major) ||
      ((hex >> 16) & 0xff) != static_cast<std::uint64_t>(version.minor))
    return invalid("_Py_DebugOffsets names another version than the interpreter");
  if (layout.free_threaded_at && u64_at(raw, *layout.free_threaded_at) != 0)
    return {DebugOffsetsStatus::FreeThreaded, {}};

  // Validate everything before changing anything: all or nothing.
  std::map<std::string, std::uint64_t, std::less<>> fields, sizes;
  for (const auto& [name, at] : layout.fields) {
    std::uint64_t v = u64_at(raw, at);
    if (v > kMaxValue) return invalid("_Py_DebugOffsets value of " + name + " is out of range");
    fields[name] = v;
  }
  for (const auto& [name, at] : layout.sizes) {
    std::uint64_t v = u64_at(raw, at);
    if (v > kMaxValue) return invalid("_Py_DebugOffsets size of " + name + " is out of range");
    sizes[name] = v;
  }
  // The one size the ELF file confirms: where the table says _Py_DebugOffsets
  // keeps sizeof(_PyRuntimeState), the target must keep its _PyRuntime's size.
  auto runtime_state = sizes.find("_PyRuntimeState");
  if (runtime_size && runtime_state != sizes.end() && runtime_state->second != runtime_size)
    return invalid("_Py_DebugOffsets says sizeof(_PyRuntimeState) is " + std::to_string(runtime_state->second) +
                   " but _PyRuntime is " + std::to_string(runtime_size) +
                   " bytes: its layout is not the one offsets row " + row.label + " describes");

  std::string moved;
  for (const auto& [name, v] : fields) {
    auto old = row.field(name);
    if (old && *old != v) {
      moved += " " + name + " " + std::to_string(*old) + "->" + std::to_string(v);
      row.moved_by_target.push_back(name);
    }
    row.fields[name] = static_cast<std::uint32_t>(v);
  }
  for (const auto& [name, v] : sizes) {
    auto old = row.size(name);
    if (old && *old != v) {
      moved += " sizeof(" + name + ") " + std::to_string(*old) + "->" + std::to_string(v);
      row.moved_by_target.push_back("sizeof(" + name + ")");
    }
    row.sizes[name] = v;
  }
  std::string text = "_Py_DebugOffsets of the target (" + std::to_string(fields.size() + sizes.size()) +
                     " values), offsets row " + row.label + " for the rest";
  if (!moved.empty()) text += "; differs from the row:" + moved;
  return {DebugOffsetsStatus::Applied, text};
}

}  // namespace pyebpf::python
