// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stack/frames.hpp"

namespace pyebpf::native {

// Kernel text symbols from /proc/kallsyms, for naming kernel stack frames.
// Compact (16 bytes per symbol plus its name once, ~4 MB for a distro
// kernel's ~100k functions, not the ~15 MB of a string per field): pyebpf's
// own memory is part of its cost to a sick host.
class Kallsyms {
 public:
  struct Symbol {
    std::uint64_t address = 0;
    std::string_view name;    // views into the table
    std::string_view module;  // "" for the kernel image, "nf_tables", "bpf"...
  };

  // Parses kallsyms text. Only text symbols (t/T/w/W) are kept; lines that do
  // not parse are skipped. zero_addresses() tells that the text came from a
  // reader without the right to see addresses (kptr_restrict).
  static Kallsyms parse(std::string_view text);
  // Reads /proc/kallsyms (or `path`) in large pieces, never whole; an unreadable file gives
  // an empty table.
  static Kallsyms load(const std::string& path = "/proc/kallsyms");

  // The symbol an address belongs to: the nearest one at or below it, unless
  // that is further away than any kernel function is long.
  std::optional<Symbol> lookup(std::uint64_t address) const;
  // The frame at `address`: its symbol (and module), else the bare address.
  // Views into this table.
  stack::NativeFrame frame(std::uint64_t address) const;
  // Its text: "schedule", "nft_do_chain [nf_tables]", or "[unknown] [0xffffffffc0a01234]".
  std::string name(std::uint64_t address) const { return stack::text_of(frame(address)); }

  std::size_t size() const { return entries_.size(); }
  bool zero_addresses() const { return zero_addresses_; }

 private:
  struct Entry {
    std::uint64_t address;
    std::uint32_t name_at;  // in names_
    std::uint16_t name_size;
    std::uint16_t module;  // in modules_
  };
  // Parsing: adds one symbol line's fields, then sorts once at the end.
  void add(std::uint64_t address, std::string_view name, std::string_view module);
  void finish();

  std::vector<Entry> entries_;  // sorted by address
  std::string names_;
  std::deque<std::string> modules_{""};  // a deque: module_index_'s views stay valid as it grows
  std::unordered_map<std::string_view, std::uint16_t> module_index_;  // while parsing
  bool any_nonzero_ = false;
  bool zero_addresses_ = false;
};

}  // namespace pyebpf::native
