// SPDX-License-Identifier: Apache-2.0
#include "python/interpreter.hpp"

#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

#include <spdlog/spdlog.h>

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

// Where no Py_Version symbol exists (<= 3.10): PY_VERSION ("3.10.13") is a
// string in .rodata, used by Py_GetVersion(). `prefix` narrows the search to
// a known major.minor ("3.10.") or to any 3.x ("3."). Ambiguity gives nullopt.
std::optional<PyVersion> version_from_rodata(const binary::ElfFile& elf, const std::string& prefix) {
  static const std::regex exact(R"(^(\d+)\.(\d+)\.(\d+)((?:a|b|rc)\d+)?\+?$)");
  std::set<std::string> found;
  for (const auto& s : elf.strings_starting_with(".rodata", prefix)) {
    if (std::regex_match(s, exact)) found.insert(s);
  }
  if (found.size() != 1) return std::nullopt;
  std::smatch m;
  std::regex_match(*found.begin(), m, exact);
  return PyVersion{std::stoi(m[1].str()), std::stoi(m[2].str()), std::stoi(m[3].str()), m[4].str()};
}

// Candidates: libpython*.so and the executable itself, each mapped file
// once, libpython ones first. /proc/PID/exe and maps show paths the same way.
std::vector<const procfs::Mapping*> interpreter_candidates(pid_t pid, const std::vector<procfs::Mapping>& maps) {
  const std::string exe = exe_path(pid);
  std::vector<const procfs::Mapping*> candidates;
  std::set<std::string> seen;
  for (const auto& m : maps) {
    if (!m.file_backed() || !seen.insert(m.path).second) continue;
    if (looks_like_libpython(m.path) || m.path == exe) candidates.push_back(&m);
  }
  std::stable_partition(candidates.begin(), candidates.end(),
                        [](const procfs::Mapping* m) { return looks_like_libpython(m->path); });
  return candidates;
}

// The candidate's ELF file; nullopt, and why in `unusable`, when it is not
// one the dynamic loader could have loaded.
std::optional<binary::ElfFile> open_candidate(const std::string& open_path, const std::string& shown,
                                              std::vector<std::string>& unusable) {
  std::optional<binary::ElfFile> elf;
  try {
    elf.emplace(binary::ElfFile::open(open_path));
  } catch (const Error& e) {
    // A process can map any bytes under any name; a file the dynamic
    // loader could not have loaded is not its interpreter.
    unusable.push_back(shown + ": " + e.what());
    return std::nullopt;
  }
  if (!elf->defects().empty()) {
    unusable.push_back(shown + ": a damaged ELF file (" + elf->defects() + ")");
    return std::nullopt;
  }
  return elf;
}

// The version of an interpreter with _PyRuntime, mapped from `path`: from
// its Py_Version symbol, else its PY_VERSION string, else the file name;
// left 0 when none tells.
void find_version(Interpreter& interp, pid_t pid, const std::string& path) {
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
    auto from_name = version_from_filename(path);
    auto from_rodata = version_from_rodata(interp.elf, from_name ? from_name->minor_str() + "." : "3.");
    if (from_rodata) {
      interp.version = *from_rodata;
      interp.version_source = "PY_VERSION string";
    } else if (from_name) {
      interp.version = *from_name;
      interp.version_source = "file name";
    }
  }
}

// The one-line refusal of a process no candidate of which is an interpreter,
// with the candidates skipped and why.
Error not_cpython(pid_t pid, const std::vector<std::string>& unusable,
                  const std::vector<std::string>& not_interpreters) {
  std::string comm = read_comm(pid, pid);
  std::string why;
  for (const auto* list : {&unusable, &not_interpreters}) {
    for (const auto& s : *list) why += "; skipped " + s;
  }
  return Error("pid " + std::to_string(pid) + " (" + comm +
                   ") is not a CPython process: no mapped file defines _PyRuntime" + why,
               "pass the PID of a python process (CPython 3.8-3.15); `cat /proc/" + std::to_string(pid) +
                   "/maps` shows what it runs");
}

}  // namespace

std::string Interpreter::file_name() const {
  return mapped_path.substr(mapped_path.find_last_of('/') + 1);
}

std::optional<std::uint64_t> Interpreter::symbol_address(std::string_view name) const {
  auto sym = elf.symbol(name);
  if (!sym) return std::nullopt;
  return load_bias + sym->value;
}

std::optional<std::uint64_t> load_bias(const binary::ElfFile& elf, const std::vector<procfs::Mapping>& maps,
                                       const std::string& maps_path) {
  for (const auto& m : maps) {
    if (m.path != maps_path) continue;
    for (const auto& seg : elf.load_segments()) {
      // The kernel maps each PT_LOAD from its page-aligned file offset.
      if ((seg.offset & kPageMask) == m.offset) return m.start - (seg.vaddr & kPageMask);
    }
  }
  return std::nullopt;
}

Interpreter discover_interpreter(pid_t pid) {
  const std::string who = "pid " + std::to_string(pid);
  std::vector<procfs::Mapping> maps = procfs::read_maps(pid);

  std::optional<Interpreter> old_python;  // a Python without _PyRuntime (<= 3.6)
  // Candidates that are not ELF files the loader could have loaded, and why:
  // warnings when another candidate is the interpreter, the reason of the
  // one-line refusal otherwise (with libpython-named files that are ELF but
  // not an interpreter: a stable-ABI libpython3.so beside a real one is no
  // cause for a warning).
  std::vector<std::string> unusable, not_interpreters;
  auto found = [&](Interpreter interp) {
    for (const auto& why : unusable) spdlog::warn("{}: skipped {}", who, why);
    return interp;
  };
  for (const procfs::Mapping* m : interpreter_candidates(pid, maps)) {
    std::string open_path = procfs::open_path(pid, *m);
    std::string shown = procfs::target_path(pid, m->path);
    std::optional<binary::ElfFile> elf = open_candidate(open_path, shown, unusable);
    if (!elf) continue;
    auto runtime = elf->symbol("_PyRuntime");
    if (!runtime) {
      auto v = version_from_filename(m->path);
      if (v && !old_python && (elf->symbol("Py_Initialize") || elf->symbol("Py_GetVersion"))) {
        old_python = Interpreter{shown, open_path, std::move(*elf), 0, *v, "file name", 0, 0};
      } else if (looks_like_libpython(m->path)) {
        not_interpreters.push_back(shown + ": an ELF file without a _PyRuntime symbol");
      }
      continue;
    }
    auto bias = load_bias(*elf, maps, m->path);
    if (!bias) throw Error(who + ": cannot tell where " + shown + " is loaded (no PT_LOAD matches its mappings)");

    Interpreter interp{shown, open_path, std::move(*elf), *bias, {}, {}, 0, 0};
    interp.runtime_addr = *bias + runtime->value;
    interp.runtime_size = runtime->size;
    find_version(interp, pid, m->path);
    if (interp.version.major == 0)
      throw Error(who + ": found _PyRuntime in " + shown + " but cannot tell its Python version");
    return found(std::move(interp));
  }

  // Too old to have _PyRuntime: returned so the caller names the version it does not support.
  if (old_python) return found(std::move(*old_python));
  throw not_cpython(pid, unusable, not_interpreters);
}

}  // namespace pyebpf::python
