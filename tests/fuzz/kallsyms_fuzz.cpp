// SPDX-License-Identifier: Apache-2.0
// The kallsyms parser on arbitrary text (a mangled or truncated
// /proc/kallsyms, or one read without the right to see addresses), then
// lookups around every address the text starts a line with.
#include <charconv>
#include <cstdint>
#include <string_view>

#include "native/kallsyms.hpp"

using pyebpf::native::Kallsyms;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Kallsyms table = Kallsyms::parse(text);
  (void)table.zero_addresses();
  for (std::uint64_t address : {std::uint64_t{0}, std::uint64_t{0xffffffff81000000}, ~std::uint64_t{0}}) {
    (void)table.name(address);
  }
  // Each line's leading hex number and its neighbours: exact hits and near misses.
  while (!text.empty()) {
    std::uint64_t address = 0;
    std::from_chars(text.data(), text.data() + text.size(), address, 16);
    for (std::uint64_t near : {address - 1, address, address + 1}) (void)table.name(near);
    std::size_t nl = text.find('\n');
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return 0;
}
