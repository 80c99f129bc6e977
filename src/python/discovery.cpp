// SPDX-License-Identifier: Apache-2.0
#include "python/discovery.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "pyebpf/error.hpp"
#include "python/memory.hpp"
#include "util/files.hpp"

namespace pyebpf::python {
namespace {

constexpr std::uint64_t kPageMask = ~std::uint64_t{0xfff};

std::string exe_path(pid_t pid) {
  char buf[4096];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() && path.ends_with(deleted)) path.resize(path.size() - deleted.size());
  return path;
}

bool looks_like_libpython(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  return base.starts_with("libpython");
}

}  // namespace

std::string Interpreter::file_name() const { return mapped_path.substr(mapped_path.find_last_of('/') + 1); }

std::optional<std::uint64_t> Interpreter::symbol_address(std::string_view name) const {
  auto sym = elf.symbol(name);
  if (!sym) return std::nullopt;
  return load_bias + sym->value;
}

std::optional<std::uint64_t> load_bias(const ElfFile& elf, const std::vector<Mapping>& maps,
                                       const std::string& mapped_path) {
  for (const auto& m : maps) {
    if (m.path != mapped_path) continue;
    for (const auto& seg : elf.load_segments()) {
      // The kernel maps each PT_LOAD from its page-aligned file offset.
      if ((seg.offset & kPageMask) == m.offset) return m.start - (seg.vaddr & kPageMask);
    }
  }
  return std::nullopt;
}

Interpreter discover_interpreter(pid_t pid) {
  const std::string who = "pid " + std::to_string(pid);
  std::vector<Mapping> maps = read_maps(pid);

  // Candidates: libpython*.so and the executable itself, each mapped file once.
  const std::string exe = exe_path(pid);
  std::vector<const Mapping*> candidates;
  std::set<std::string> seen;
  for (const auto& m : maps) {
    if (!m.file_backed() || !seen.insert(m.path).second) continue;
    if (looks_like_libpython(m.path) || m.path == exe) candidates.push_back(&m);
  }
  std::stable_partition(candidates.begin(), candidates.end(),
                        [](const Mapping* m) { return looks_like_libpython(m->path); });

  for (const Mapping* m : candidates) {
    std::string open_path = host_path(pid, *m);
    ElfFile elf = ElfFile::open(open_path);
    auto runtime = elf.symbol("_PyRuntime");
    if (!runtime) continue;
    auto bias = load_bias(elf, maps, m->path);
    if (!bias) throw Error(who + ": cannot tell where " + m->path + " is loaded (no PT_LOAD matches its mappings)");

    Interpreter interp{m->path, open_path, std::move(elf), *bias, {}, {}, 0, 0};
    interp.runtime_addr = *bias + runtime->value;
    interp.runtime_size = runtime->size;
    ProcessMemory memory(pid);
    if (auto py_version = interp.symbol_address("Py_Version")) {
      // Py_Version (3.11+) is a const u32 holding PY_VERSION_HEX.
      auto hex = memory.read_value<std::uint32_t>(*py_version);
      if (hex) {
        if (auto v = version_from_hex(*hex)) {
          interp.version = *v;
          interp.version_source = "Py_Version symbol";
        }
      }
    }
    if (interp.version.major == 0) {
      if (auto v = version_from_filename(m->path)) {
        interp.version = *v;
        interp.version_source = "file name";
      }
    }
    if (interp.version.major == 0)
      throw Error(who + ": found _PyRuntime in " + m->path + " but cannot tell its Python version");
    return interp;
  }

  std::string comm = read_comm(pid, pid);
  throw Error(who + " (" + comm + ") is not a CPython process: no mapped file defines _PyRuntime",
              "pass the PID of a python process (CPython 3.8-3.13); `cat /proc/" + std::to_string(pid) +
                  "/maps` shows what it runs");
}

}  // namespace pyebpf::python
