// SPDX-License-Identifier: Apache-2.0
#include "native/libc.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "binary/elf_file.hpp"
#include "pyebpf/error.hpp"

namespace pyebpf::native {
namespace {

std::string file_name(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

// The path /proc/PID/maps shows for the process's executable.
std::string executable_path(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  const std::string deleted = " (deleted)";
  if (path.ends_with(deleted)) path.resize(path.size() - deleted.size());
  return path;
}

// A function's code; none if its size is unknown or too large for a wrapper,
// or the file does not hold it (the probe then stays at offset 0).
std::vector<std::uint8_t> function_code(const binary::ElfFile& elf, const binary::ElfSymbol& sym) {
  if (sym.size == 0 || sym.size > kMaxCodeBytes) return {};
  return elf.read(sym.value, static_cast<std::size_t>(sym.size)).value_or(std::vector<std::uint8_t>{});
}

std::vector<procfs::Mapping> c_libraries_in(const std::vector<procfs::Mapping>& maps) {
  std::vector<std::pair<int, procfs::Mapping>> libs;
  for (const auto& m : maps) {
    int rank = c_library_rank(file_name(m.path));
    if (!m.file_backed() || rank < 0) continue;
    if (std::none_of(libs.begin(), libs.end(), [&](const auto& l) { return l.second.path == m.path; }))
      libs.emplace_back(rank, m);
  }
  std::stable_sort(libs.begin(), libs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<procfs::Mapping> out;
  for (auto& [rank, m] : libs) out.push_back(std::move(m));
  return out;
}

// The functions of `names` one file defines (name, offset, code; the paths
// are the caller's). Cached per file identity (device, inode, size, mtime)
// and names: the workers a server forks map the same C library and
// executable, and one recycled every few seconds must not cost two ELF
// parses on the way to its first request. Throws pyebpf::Error.
std::vector<LibcFunction> functions_in(const std::string& open_path, const std::vector<std::string>& names) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<LibcFunction>> cache;
  constexpr std::size_t kMaxCached = 64;
  struct stat st {};
  std::string key;
  if (::stat(open_path.c_str(), &st) == 0) {
    key = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
          std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    for (const auto& name : names) key += "," + name;
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto elf = binary::ElfFile::open(open_path);
  std::vector<LibcFunction> out;
  for (const auto& name : names) {
    auto sym = elf.symbol(name);
    // An IFUNC's address is its resolver, not the function: no probe there.
    if (!sym || sym->type != STT_FUNC) continue;
    if (auto offset = elf.file_offset(sym->value)) out.push_back({name, {}, {}, *offset, function_code(elf, *sym)});
  }
  if (!key.empty()) {
    std::lock_guard lock(mutex);
    if (cache.size() >= kMaxCached) cache.clear();
    cache.emplace(key, out);
  }
  return out;
}

}  // namespace

int c_library_rank(const std::string& name) {
  if (name.starts_with("libpthread.") || name.starts_with("libpthread-")) return 0;
  if (name.starts_with("libc.") || name.starts_with("libc-") || name.starts_with("ld-musl") ||
      name.starts_with("libc.musl"))
    return 1;
  return -1;
}

std::vector<procfs::Mapping> c_libraries(pid_t pid) {
  return c_libraries_in(procfs::read_maps(pid));
}

std::vector<LibcFunction> libc_functions_in(const std::vector<LibcFile>& files, const std::vector<std::string>& names,
                                            std::vector<std::string>& unreadable) {
  std::vector<LibcFunction> out;
  for (const auto& file : files) {
    try {
      for (auto& f : functions_in(file.open_path, names)) {
        f.open_path = file.open_path;
        f.mapped_path = file.mapped_path;
        out.push_back(std::move(f));
      }
    } catch (const Error& e) {
      unreadable.push_back(file.mapped_path + ": " + e.what());
    }
  }
  return out;
}

std::vector<LibcFunction> libc_functions(pid_t pid, const std::vector<std::string>& names,
                                         std::vector<std::string>& unreadable) {
  const auto maps = procfs::read_maps(pid);
  std::vector<procfs::Mapping> mappings = c_libraries_in(maps);
  const std::string exe = executable_path(pid);
  for (const auto& m : maps) {
    if (m.file_backed() && m.path == exe) {
      if (std::none_of(mappings.begin(), mappings.end(), [&](const auto& f) { return f.path == exe; }))
        mappings.push_back(m);
      break;
    }
  }
  std::vector<LibcFile> files;
  for (const auto& m : mappings) files.push_back({procfs::open_path(pid, m), procfs::target_path(pid, m.path)});
  return libc_functions_in(files, names, unreadable);
}

}  // namespace pyebpf::native
