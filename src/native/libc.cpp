// SPDX-License-Identifier: Apache-2.0
#include "native/libc.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

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

std::vector<LibcFunction> libc_functions(pid_t pid, const std::vector<std::string>& names) {
  const auto maps = procfs::read_maps(pid);
  std::vector<procfs::Mapping> files = c_libraries_in(maps);
  const std::string exe = executable_path(pid);
  for (const auto& m : maps) {
    if (m.file_backed() && m.path == exe) {
      if (std::none_of(files.begin(), files.end(), [&](const auto& f) { return f.path == exe; })) files.push_back(m);
      break;
    }
  }
  std::vector<LibcFunction> out;
  for (const auto& m : files) {
    std::string open_path = procfs::open_path(pid, m);
    try {
      auto elf = binary::ElfFile::open(open_path);
      for (const auto& name : names) {
        auto sym = elf.symbol(name);
        // An IFUNC's address is its resolver, not the function: no probe there.
        if (!sym || sym->type != STT_FUNC) continue;
        if (auto offset = elf.file_offset(sym->value))
          out.push_back({name, open_path, procfs::target_path(pid, m.path), *offset, function_code(elf, *sym)});
      }
    } catch (const Error& e) {
      spdlog::debug("pid {}: C library functions: {}", pid, e.what());
    }
  }
  return out;
}

}  // namespace pyebpf::native
