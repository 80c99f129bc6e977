// SPDX-License-Identifier: Apache-2.0
#include "native/kallsyms.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>

#include "util/text.hpp"

namespace pyebpf::native {
namespace {

// Beyond this distance from the nearest symbol below, an address is not
// attributed to it (the gap is data, a module hole or a missing symbol).
constexpr std::uint64_t kMaxFunctionSpan = 1 << 20;

// Calls fn(address, name, module) for each text symbol (t/T/w/W) in kallsyms
// text; lines that do not parse are skipped.
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
    fn(address, name, module);
  }
}

// The same for a kallsyms file, read a line at a time: the whole file
// (~5 MB on a distro kernel) is never in memory at once.
template <typename Fn>
void for_each_file_symbol(const std::string& path, Fn&& fn) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) for_each_text_symbol(line, fn);
}

}  // namespace

void Kallsyms::add(std::uint64_t address, std::string_view name, std::string_view module) {
  if (name.size() > UINT16_MAX || names_.size() + name.size() > UINT32_MAX) return;
  std::uint16_t m = 0;
  if (!module.empty()) {
    auto [it, added] = module_index_.try_emplace(std::string(module), static_cast<std::uint16_t>(modules_.size()));
    if (added) {
      if (modules_.size() > UINT16_MAX) {
        module_index_.erase(it);
        return;
      }
      modules_.emplace_back(module);
    }
    m = it->second;
  }
  any_nonzero_ |= address != 0;
  entries_.push_back({address, static_cast<std::uint32_t>(names_.size()), static_cast<std::uint16_t>(name.size()), m});
  names_.append(name);
}

void Kallsyms::finish() {
  module_index_ = {};
  zero_addresses_ = !entries_.empty() && !any_nonzero_;
  if (zero_addresses_) {
    entries_ = {};
    names_ = {};
  }
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.address < b.address; });
  entries_.shrink_to_fit();
  names_.shrink_to_fit();
}

Kallsyms Kallsyms::parse(std::string_view text) {
  Kallsyms out;
  for_each_text_symbol(text, [&](std::uint64_t address, std::string_view name, std::string_view module) {
    out.add(address, name, module);
  });
  out.finish();
  return out;
}

Kallsyms Kallsyms::load(const std::string& path) {
  Kallsyms out;
  for_each_file_symbol(path, [&](std::uint64_t address, std::string_view name, std::string_view module) {
    out.add(address, name, module);
  });
  out.finish();
  return out;
}

std::optional<Kallsyms::Symbol> Kallsyms::lookup(std::uint64_t address) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](std::uint64_t a, const Entry& e) { return a < e.address; });
  if (it == entries_.begin()) return std::nullopt;
  --it;
  if (address - it->address > kMaxFunctionSpan) return std::nullopt;
  return Symbol{it->address, std::string_view(names_).substr(it->name_at, it->name_size), modules_[it->module]};
}

stack::NativeFrame Kallsyms::frame(std::uint64_t address) const {
  if (auto s = lookup(address)) return {stack::NativeFrame::Kind::Symbol, s->name, s->module};
  return {stack::NativeFrame::Kind::Address, {}, {}, address};
}

}  // namespace pyebpf::native
