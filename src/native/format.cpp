// SPDX-License-Identifier: Apache-2.0
#include "native/format.hpp"

#include <spdlog/fmt/fmt.h>

namespace pyebpf::native {

std::string frame_with_module(std::string_view name, std::string_view module) {
  return fmt::format("{} [{}]", name, module);
}

std::string unresolved_frame(std::uint64_t address) {
  return fmt::format("{} [{:#x}]", kUnknown, address);
}

std::string unresolved_in_module(std::string_view module, std::uint64_t offset) {
  return fmt::format("{} [{}+{:#x}]", kUnknown, module, offset);
}

}  // namespace pyebpf::native
