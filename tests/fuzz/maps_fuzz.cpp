// SPDX-License-Identifier: Apache-2.0
// The /proc/PID/maps parser on arbitrary text: mapped paths are chosen by the
// target (any bytes but '\n', " (deleted)" suffixes, no path at all).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "procfs/maps.hpp"

using namespace pyebpf::procfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const Mapping& m : parse_maps(text)) {
    (void)m.executable();
    (void)m.file_backed();
  }
  return 0;
}
