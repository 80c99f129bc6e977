// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "python/memory.hpp"
#include "python/offsets.hpp"
#include "python/version.hpp"

namespace pyebpf::python {

// Addresses of the builtin type objects in one target, used to check what an
// object is before trusting its layout.
struct TypeAddresses {
  std::uint64_t code = 0;     // PyCode_Type
  std::uint64_t unicode = 0;  // PyUnicode_Type
  std::uint64_t bytes = 0;    // PyBytes_Type
  std::uint64_t dict = 0;     // PyDict_Type
  std::uint64_t long_ = 0;    // PyLong_Type
  std::uint64_t module = 0;   // PyModule_Type
};

// Reads Python objects (str, bytes, int, dict, instance attributes) out of a
// target process, following the layout of its CPython version. Everything read
// is bounded and type-checked: a torn read gives nullopt, never garbage.
class ObjectReader {
 public:
  ObjectReader(const ProcessMemory& memory, const OffsetsRow& offsets, PyVersion version, TypeAddresses types);

  const ProcessMemory& memory() const { return memory_; }
  const OffsetsRow& offsets() const { return offsets_; }
  const TypeAddresses& types() const { return types_; }

  std::optional<std::uint64_t> type_of(std::uint64_t obj) const;
  // A str as UTF-8 (compact ASCII, and 1/2/4-byte kinds). Strings longer than
  // `max_chars` code points are cut there.
  std::optional<std::string> read_str(std::uint64_t obj, std::size_t max_chars = 4096) const;
  // The payload of a bytes object, at most `max_len` bytes.
  std::optional<std::vector<std::uint8_t>> read_bytes(std::uint64_t obj, std::size_t max_len = 1 << 20) const;
  // An int that fits in 64 bits (signed), e.g. a thread ident.
  std::optional<std::int64_t> read_int(std::uint64_t obj) const;
  // A dict's entry table in insertion order: slot i holds the i-th insertion
  // into this keys table, (0, 0) once deleted. A resize moves the entries to
  // a new keys table, so (keys, slot) names one insertion.
  struct DictEntries {
    std::uint64_t keys = 0;
    std::size_t used = 0;                                        // dk_nentries
    std::vector<std::pair<std::uint64_t, std::uint64_t>> slots;  // (key, value): the first `max_items` of `used`
  };
  std::optional<DictEntries> dict_entries(std::uint64_t dict, std::size_t max_items = 1 << 16) const;
  // Value of the str key `key` in a dict.
  std::optional<std::uint64_t> dict_get(std::uint64_t dict, std::string_view key) const;
  // The global `name` of module `module` (sys.modules[module].__dict__[name])
  // of the interpreter `*interp_ptr` points at; nullopt if the module is not
  // imported or either cannot be read.
  std::optional<std::uint64_t> module_global(std::uint64_t interp_ptr, std::string_view module,
                                             std::string_view name) const;
  // Instance attributes stored in the object's __dict__ (or its inline /
  // managed values on 3.11+), e.g. Thread._name, in the order of `names`:
  // one pass over the object's keys for all of them.
  std::vector<std::optional<std::uint64_t>> instance_attrs(std::uint64_t obj,
                                                           const std::vector<std::string_view>& names) const;

 private:
  struct DictView;
  std::optional<DictView> view_keys(std::uint64_t keys, std::uint64_t values) const;
  std::optional<DictEntries> read_entries(const DictView& view, std::uint64_t keys, std::size_t max_items) const;
  std::vector<std::optional<std::uint64_t>> find_str_keys(const DictEntries& entries,
                                                          const std::vector<std::string_view>& names) const;

  const ProcessMemory& memory_;
  const OffsetsRow& offsets_;
  PyVersion version_;
  TypeAddresses types_;
};

}  // namespace pyebpf::python
