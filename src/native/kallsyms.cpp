// SPDX-License-Identifier: Apache-2.0
#include "native/kallsyms.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "pyebpf/fd.hpp"

namespace pyebpf::native {
namespace {

// Beyond this distance from the nearest symbol below, an address is not
// attributed to it (the gap is data, a module hole or a missing symbol).
constexpr std::uint64_t kMaxFunctionSpan = 1 << 20;

// The next field of `line` separated by spaces or tabs, removed from it.
// By hand: find_first_of() is a memchr per character, and the ~120k lines of
// a distro kernel's kallsyms made that most of the first off-CPU event's cost.
std::string_view next_symbol_field(std::string_view& line) {
  auto separator = [](char c) { return c == ' ' || c == '\t'; };
  std::size_t start = 0;
  while (start < line.size() && separator(line[start])) ++start;
  std::size_t end = start;
  while (end < line.size() && !separator(line[end])) ++end;
  std::string_view field = line.substr(start, end - start);
  line.remove_prefix(end);
  return field;
}

// Calls fn(address, name, module) for each text symbol (t/T/w/W) in kallsyms
// text; lines that do not parse are skipped.
template <typename Fn>
void for_each_text_symbol(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t nft_do_chain\t[nf_tables]"
    std::string_view addr = next_symbol_field(line), type = next_symbol_field(line);
    std::string_view name = next_symbol_field(line), module = next_symbol_field(line);
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

// The same for a kallsyms file, read in large pieces (a few dozen read(2)
// calls for a distro kernel's ~5 MB) whose whole lines are parsed in place:
// the whole file is never in memory at once.
template <typename Fn>
void for_each_file_symbol(const std::string& path, Fn&& fn) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  constexpr std::size_t kPiece = 256 << 10;
  std::string buffer(kPiece, '\0');
  std::size_t held = 0;  // bytes of an unfinished line kept from the last read
  for (;;) {
    if (held == buffer.size()) buffer.resize(buffer.size() * 2);  // a line longer than a piece
    ssize_t n = ::read(fd.get(), buffer.data() + held, buffer.size() - held);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view data(buffer.data(), held + static_cast<std::size_t>(n));
    std::size_t whole = data.rfind('\n') + 1;  // npos + 1 == 0: no whole line yet
    for_each_text_symbol(data.substr(0, whole), fn);
    held = data.size() - whole;
    std::memmove(buffer.data(), buffer.data() + whole, held);
  }
  for_each_text_symbol(std::string_view(buffer.data(), held), fn);
}

}  // namespace

void Kallsyms::add(std::uint64_t address, std::string_view name, std::string_view module) {
  if (name.size() > UINT16_MAX || names_.size() + name.size() > UINT32_MAX) return;
  std::uint16_t m = 0;
  if (!module.empty()) {
    auto it = module_index_.find(module);
    if (it == module_index_.end()) {
      if (modules_.size() > UINT16_MAX) return;
      const auto index = static_cast<std::uint16_t>(modules_.size());
      it = module_index_.emplace(modules_.emplace_back(module), index).first;
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
  // The kernel lists its own symbols by address already; modules follow.
  auto by_address = [](const Entry& a, const Entry& b) { return a.address < b.address; };
  if (!std::is_sorted(entries_.begin(), entries_.end(), by_address))
    std::stable_sort(entries_.begin(), entries_.end(), by_address);
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
