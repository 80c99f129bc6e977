// SPDX-License-Identifier: Apache-2.0
#include "native/symbolizer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "pyebpf/error.hpp"

namespace pyebpf::native {
namespace {

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::shared_ptr<const binary::ElfFile> ElfCache::get(pid_t pid, const procfs::Mapping& mapping) {
  std::string path = procfs::open_path(pid, mapping);
  auto id = procfs::file_id(path);
  if (!id) return nullptr;
  auto key = std::make_pair(id->dev, id->inode);
  auto it = files_.find(key);
  if (it != files_.end()) return it->second;
  std::shared_ptr<const binary::ElfFile> file;
  try {
    file = std::make_shared<const binary::ElfFile>(binary::ElfFile::open(path));
  } catch (const Error& e) {
    spdlog::debug("native symbols: {}", e.what());
  }
  files_.emplace(key, file);
  return file;
}

NativeSymbolizer::NativeSymbolizer(pid_t pid, ElfCache& files) : pid_(pid), files_(files) {
  refresh_maps();
}

void NativeSymbolizer::refresh_maps() {
  refreshed_ = std::chrono::steady_clock::now();
  std::vector<procfs::Mapping> maps;
  try {
    maps = procfs::read_maps(pid_);
  } catch (const Error&) {
    return;  // process gone: keep what we knew
  }
  maps_.clear();
  cache_.clear();  // a library may have been unloaded and another mapped in its place
  for (auto& m : maps) {
    if (m.executable() && m.file_backed()) maps_.push_back(std::move(m));
  }
  std::sort(maps_.begin(), maps_.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
}

const procfs::Mapping* NativeSymbolizer::mapping_of(std::uint64_t address) {
  auto find = [&]() -> const procfs::Mapping* {
    auto it = std::upper_bound(maps_.begin(), maps_.end(), address,
                               [](std::uint64_t a, const procfs::Mapping& m) { return a < m.start; });
    if (it == maps_.begin()) return nullptr;
    --it;
    return address < it->end ? &*it : nullptr;
  };
  if (const auto* m = find()) return m;
  if (std::chrono::steady_clock::now() - refreshed_ < std::chrono::seconds(1)) return nullptr;
  refresh_maps();  // a library loaded since (dlopen)
  return find();
}

stack::NativeFrame NativeSymbolizer::frame(std::uint64_t address, bool return_address) {
  using Kind = stack::NativeFrame::Kind;
  std::uint64_t lookup = return_address && address > 0 ? address - 1 : address;
  auto count = [this](const stack::NativeFrame& f) {
    ++(f.kind == Kind::Symbol ? resolved_ : unresolved_);
    return f;
  };
  if (auto it = cache_.find(lookup); it != cache_.end()) return count(it->second);
  const procfs::Mapping* m = mapping_of(lookup);
  if (!m) return count({Kind::Address, {}, {}, address});  // not cached: a library may be mapped there later
  std::string_view module = *modules_.emplace(basename_of(m->path)).first;
  std::uint64_t file_offset = lookup - m->start + m->offset;
  const binary::ElfSymbol* sym = nullptr;
  if (auto elf = files_.get(pid_, *m)) {
    if (auto vaddr = elf->vaddr_of_offset(file_offset)) sym = elf->function_at(*vaddr);
  }
  // Cached either way, until the maps are re-read: an address with no symbol
  // (a stripped python3) costs its ELF file's two stat calls once, not at
  // every event.
  stack::NativeFrame out = sym ? stack::NativeFrame{Kind::Symbol, sym->name, module}
                               : stack::NativeFrame{Kind::InModule, {}, module, file_offset};
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(lookup, out);
  return count(out);
}

}  // namespace pyebpf::native
