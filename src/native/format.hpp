// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pyebpf::native {

// How native frames are written in every pyebpf stack (kernel and user):
//   "name [module]"                   resolved (module omitted for the kernel image)
//   "[unknown] [libc.so.6+0x8a2b]"    inside a mapped file, no symbol covers it
//   "[unknown] [0x7f0012345678]"      outside any file mapping (JIT, anonymous, garbage)
// "[unknown]" is the marker for a frame that could not be resolved.
inline constexpr std::string_view kUnknown = "[unknown]";

std::string frame_with_module(std::string_view name, std::string_view module);
std::string unresolved_frame(std::uint64_t address);
std::string unresolved_in_module(std::string_view module, std::uint64_t offset);

}  // namespace pyebpf::native
