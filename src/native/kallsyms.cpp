// SPDX-License-Identifier: Apache-2.0
#include "native/kallsyms.hpp"

#include <algorithm>
#include <charconv>

#include "util/files.hpp"
#include "util/text.hpp"

namespace pyebpf::native {
namespace {

// Beyond this distance from the nearest symbol below, an address is not
// attributed to it (the gap is data, a module hole or a missing symbol).
constexpr std::uint64_t kMaxFunctionSpan = 1 << 20;

// Calls fn(address, name, module) for each text symbol (t/T/w/W) in kallsyms
// text; lines that do not parse are skipped. fn returns false to stop.
template <typename Fn>
void for_each_text_symbol(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t nft_do_chain\t[nf_tables]"
    std::string_view addr = next_field(line, " \t"), type = next_field(line, " \t"), name = next_field(line, " \t");
    std::string_view module = next_field(line, " \t");
    if (addr.empty() || type.size() != 1 || name.empty()) continue;
    char t = type[0];
    if (t != 't' && t != 'T' && t != 'w' && t != 'W') continue;
    std::uint64_t address = 0;
    auto [ptr, ec] = std::from_chars(addr.data(), addr.data() + addr.size(), address, 16);
    if (ec != std::errc() || ptr != addr.data() + addr.size()) continue;
    if (module.size() > 2 && module.front() == '[' && module.back() == ']')
      module = module.substr(1, module.size() - 2);
    else
      module = {};
    if (!fn(address, name, module)) return;
  }
}

}  // namespace

Kallsyms Kallsyms::parse(std::string_view text) {
  Kallsyms out;
  bool any_nonzero = false, any = false;
  for_each_text_symbol(text, [&](std::uint64_t address, std::string_view name, std::string_view module) {
    any = true;
    any_nonzero |= address != 0;
    out.symbols_.push_back(Symbol{address, std::string(name), std::string(module)});
    return true;
  });
  out.zero_addresses_ = any && !any_nonzero;
  if (out.zero_addresses_) out.symbols_.clear();
  std::stable_sort(out.symbols_.begin(), out.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return out;
}

Kallsyms Kallsyms::load(const std::string& path) {
  auto text = read_text_file(path);
  return text ? parse(*text) : Kallsyms{};
}

std::uint64_t Kallsyms::address_of(std::string_view symbol, const std::string& path) {
  auto text = read_text_file(path);
  std::uint64_t found = 0;
  if (text)
    for_each_text_symbol(*text, [&](std::uint64_t address, std::string_view name, std::string_view) {
      if (name != symbol) return true;
      found = address;
      return false;
    });
  return found;
}

const Kallsyms::Symbol* Kallsyms::lookup(std::uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](std::uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (address - it->address > kMaxFunctionSpan) return nullptr;
  return &*it;
}

stack::NativeFrame Kallsyms::frame(std::uint64_t address) const {
  if (const Symbol* s = lookup(address)) return {stack::NativeFrame::Kind::Symbol, s->name, s->module};
  return {stack::NativeFrame::Kind::Address, {}, {}, address};
}

}  // namespace pyebpf::native
