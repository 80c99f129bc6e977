// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stack/frames.hpp"

namespace pyebpf::native {

// Kernel text symbols from /proc/kallsyms, for naming kernel stack frames.
class Kallsyms {
 public:
  struct Symbol {
    std::uint64_t address = 0;
    std::string name;
    std::string module;  // "" for the kernel image, "nf_tables", "bpf"...
  };

  // Parses kallsyms text. Only text symbols (t/T/w/W) are kept; lines that do
  // not parse are skipped. zero_addresses() tells that the text came from a
  // reader without the right to see addresses (kptr_restrict).
  static Kallsyms parse(std::string_view text);
  // Reads /proc/kallsyms (or `path`); an unreadable file gives an empty table.
  static Kallsyms load(const std::string& path = "/proc/kallsyms");
  // One function's address without building the table; 0 if absent or
  // hidden (kptr_restrict shows zeros to readers without CAP_SYSLOG).
  static std::uint64_t address_of(std::string_view symbol, const std::string& path = "/proc/kallsyms");

  // The symbol an address belongs to: the nearest one at or below it, unless
  // that is further away than any kernel function is long.
  const Symbol* lookup(std::uint64_t address) const;
  // The frame at `address`: its symbol (and module), else the bare address.
  // Views into this table.
  stack::NativeFrame frame(std::uint64_t address) const;
  // Its text: "schedule", "nft_do_chain [nf_tables]", or "[unknown] [0xffffffffc0a01234]".
  std::string name(std::uint64_t address) const { return stack::text_of(frame(address)); }

  std::size_t size() const { return symbols_.size(); }
  bool zero_addresses() const { return zero_addresses_; }

 private:
  std::vector<Symbol> symbols_;  // sorted by address
  bool zero_addresses_ = false;
};

}  // namespace pyebpf::native
