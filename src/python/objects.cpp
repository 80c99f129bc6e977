// SPDX-License-Identifier: Apache-2.0
#include "python/objects.hpp"

#include <algorithm>
#include <cstring>

#include "python/unicode.hpp"

namespace pyebpf::python {
namespace {

// Type flag macros from Include/object.h (not in DWARF, so not in the table).
constexpr std::uint64_t kTpFlagsInlineValues = 1u << 2;  // 3.13+
constexpr std::uint64_t kTpFlagsManagedDict = 1u << 4;   // 3.11+

constexpr std::uint32_t kPyLongShift = 30;  // PYLONG_BITS_IN_DIGIT on 64-bit builds

std::uint32_t extract(std::uint32_t word, BitField field) {
  return (word >> field.bit) & ((1u << field.width) - 1);
}

}  // namespace

struct ObjectReader::DictView {
  std::uint64_t entries = 0;  // address of the first entry
  std::uint64_t values = 0;   // split table: address of values[0]; 0 if values live in entries
  std::size_t count = 0;      // dk_nentries
  std::size_t entry_size = 0;
  std::size_t key_offset = 0;  // within an entry
  std::size_t value_offset = 0;
};

ObjectReader::ObjectReader(const ProcessMemory& memory, const OffsetsRow& offsets, PyVersion version,
                           TypeAddresses types)
    : memory_(memory), offsets_(offsets), version_(std::move(version)), types_(types) {}

std::optional<std::uint64_t> ObjectReader::type_of(std::uint64_t obj) const {
  return memory_.read_u64(obj + offsets_.field("object.type").value_or(8));
}

std::optional<std::string> ObjectReader::read_str(std::uint64_t obj, std::size_t max_chars) const {
  if (!obj) return std::nullopt;
  if (types_.unicode && type_of(obj) != types_.unicode) return std::nullopt;
  auto length = memory_.read_value<std::int64_t>(obj + offsets_.require("unicode.length"));
  auto state = memory_.read_value<std::uint32_t>(obj + offsets_.require("unicode.state"));
  auto kind_bits = offsets_.bit("unicode.state.kind");
  auto compact_bits = offsets_.bit("unicode.state.compact");
  auto ascii_bits = offsets_.bit("unicode.state.ascii");
  auto ascii_size = offsets_.size("PyASCIIObject");
  auto compact_size = offsets_.size("PyCompactUnicodeObject");
  if (!length || !state || !kind_bits || !compact_bits || !ascii_bits || !ascii_size || !compact_size)
    return std::nullopt;
  if (*length < 0 || *length > (1 << 24)) return std::nullopt;
  unsigned kind = extract(*state, *kind_bits);
  bool compact = extract(*state, *compact_bits) != 0;
  bool ascii = extract(*state, *ascii_bits) != 0;
  if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) return std::nullopt;

  std::uint64_t data;
  if (compact && ascii) {
    data = obj + *ascii_size;
  } else if (compact) {
    data = obj + *compact_size;
  } else {
    // Legacy (non-compact) strings keep a pointer to their data right after
    // the compact header (PyUnicodeObject.data.any).
    auto ptr = memory_.read_u64(obj + *compact_size);
    if (!ptr) return std::nullopt;
    data = *ptr;
  }
  // CPython ends every str's data with a NUL code unit (PyUnicode_New). A
  // length that does not land on one is a lie (an object a buggy extension
  // overwrote), and believing it would name things with whatever memory
  // follows: refuse instead. The NUL is read with the text when it is kept whole.
  const auto total = static_cast<std::size_t>(*length);
  const std::size_t chars = std::min(total, max_chars);
  const bool whole = chars == total;
  auto raw = memory_.read_bytes(data, (chars + whole) * kind);
  if (!raw) return std::nullopt;
  std::vector<std::uint8_t> nul(kind);
  if (!whole && !memory_.read(data + total * kind, nul.data(), kind)) return std::nullopt;
  if (whole) nul.assign(raw->end() - kind, raw->end());
  if (std::any_of(nul.begin(), nul.end(), [](std::uint8_t b) { return b != 0; })) return std::nullopt;
  raw->resize(chars * kind);
  // An ASCII-flagged str holds only bytes below 0x80.
  if (ascii && std::any_of(raw->begin(), raw->end(), [](std::uint8_t b) { return b >= 0x80; })) return std::nullopt;
  return code_units_to_utf8(*raw, kind);
}

std::optional<std::vector<std::uint8_t>> ObjectReader::read_bytes(std::uint64_t obj, std::size_t max_len) const {
  if (!obj) return std::nullopt;
  if (types_.bytes && type_of(obj) != types_.bytes) return std::nullopt;
  auto size = memory_.read_value<std::int64_t>(obj + offsets_.require("varobject.size"));
  if (!size || *size < 0 || static_cast<std::uint64_t>(*size) > max_len) return std::nullopt;
  return memory_.read_bytes(obj + offsets_.require("bytes.sval"), static_cast<std::size_t>(*size));
}

std::optional<std::int64_t> ObjectReader::read_int(std::uint64_t obj) const {
  if (!obj) return std::nullopt;
  if (types_.long_ && type_of(obj) != types_.long_) return std::nullopt;
  std::uint64_t ndigits;
  bool negative;
  if (auto tag_off = offsets_.field("long.lv_tag")) {
    // 3.12+: lv_tag = ndigits << 3 | sign (0 positive, 1 zero, 2 negative).
    auto tag = memory_.read_u64(obj + *tag_off);
    if (!tag) return std::nullopt;
    ndigits = *tag >> 3;
    negative = (*tag & 3) == 2;
  } else {
    auto size = memory_.read_value<std::int64_t>(obj + offsets_.require("varobject.size"));
    if (!size) return std::nullopt;
    negative = *size < 0;
    ndigits = static_cast<std::uint64_t>(negative ? -*size : *size);
  }
  if (ndigits > 3) return std::nullopt;  // does not fit in 64 bits
  std::uint32_t digits[3] = {};
  if (ndigits && !memory_.read(obj + offsets_.require("long.digit"), digits, ndigits * sizeof(std::uint32_t)))
    return std::nullopt;
  unsigned __int128 value = 0;
  for (std::uint64_t i = ndigits; i-- > 0;) value = (value << kPyLongShift) | digits[i];
  if (value > static_cast<unsigned __int128>(INT64_MAX)) return std::nullopt;
  auto result = static_cast<std::int64_t>(value);
  return negative ? -result : result;
}

std::optional<ObjectReader::DictView> ObjectReader::view_keys(std::uint64_t keys, std::uint64_t values) const {
  if (!keys) return std::nullopt;
  DictView view;
  std::uint64_t indices = keys + offsets_.require("dictkeys.indices");
  auto nentries = memory_.read_value<std::int64_t>(keys + offsets_.require("dictkeys.nentries"));
  if (!nentries || *nentries < 0 || *nentries > (1 << 24)) return std::nullopt;
  view.count = static_cast<std::size_t>(*nentries);
  bool general = true;
  if (auto log2_index_off = offsets_.field("dictkeys.log2_index_bytes")) {
    // 3.11+: indices take 1 << dk_log2_index_bytes bytes; unicode-keyed tables
    // store {key, value} entries, general ones {hash, key, value}.
    auto log2_index = memory_.read_value<std::uint8_t>(keys + *log2_index_off);
    auto kind = memory_.read_value<std::uint8_t>(keys + offsets_.require("dictkeys.kind"));
    if (!log2_index || !kind || *log2_index > 40) return std::nullopt;
    view.entries = indices + (std::uint64_t{1} << *log2_index);
    general = *kind == offsets_.constant("dictkeys.kind_general").value_or(0);
  } else {
    // <= 3.10: dk_size slots, index width chosen by dk_size (Objects/dictobject.c DK_IXSIZE).
    auto size = memory_.read_value<std::int64_t>(keys + offsets_.require("dictkeys.size"));
    if (!size || *size <= 0 || *size > (1 << 26)) return std::nullopt;
    std::uint64_t width = *size <= 0xff ? 1 : *size <= 0xffff ? 2 : *size <= 0xffffffffLL ? 4 : 8;
    view.entries = indices + static_cast<std::uint64_t>(*size) * width;
  }
  if (general) {
    view.entry_size = offsets_.size("PyDictKeyEntry").value_or(24);
    view.key_offset = 8;
    view.value_offset = 16;
  } else {
    view.entry_size = offsets_.size("PyDictUnicodeEntry").value_or(16);
    view.key_offset = 0;
    view.value_offset = 8;
  }
  if (values) view.values = values + offsets_.field("dictvalues.values").value_or(0);
  return view;
}

std::optional<ObjectReader::DictEntries> ObjectReader::read_entries(const DictView& view, std::uint64_t keys,
                                                                    std::size_t max_items) const {
  DictEntries out{keys, view.count, {}};
  std::size_t count = std::min(view.count, max_items);
  if (count == 0) return out;
  auto entries = memory_.read_bytes(view.entries, count * view.entry_size);
  if (!entries) return std::nullopt;
  std::optional<std::vector<std::uint8_t>> values;
  if (view.values && !(values = memory_.read_bytes(view.values, count * 8))) return std::nullopt;
  out.slots.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t key, value;
    std::memcpy(&key, entries->data() + i * view.entry_size + view.key_offset, 8);
    if (values)
      std::memcpy(&value, values->data() + i * 8, 8);
    else
      std::memcpy(&value, entries->data() + i * view.entry_size + view.value_offset, 8);
    if (key && value) out.slots[i] = {key, value};  // deleted entries have NULL key or value
  }
  return out;
}

std::vector<std::optional<std::uint64_t>> ObjectReader::find_str_keys(
    const DictEntries& entries, const std::vector<std::string_view>& names) const {
  std::vector<std::optional<std::uint64_t>> found(names.size());
  std::size_t longest = 0;
  for (auto name : names) longest = std::max(longest, name.size());
  std::size_t missing = names.size();
  for (auto [key, value] : entries.slots) {
    if (!missing) break;
    if (!key) continue;
    auto text = read_str(key, longest + 1);  // each key read once, whatever the number of names
    if (!text) continue;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!found[i] && *text == names[i]) {
        found[i] = value;
        --missing;
      }
    }
  }
  return found;
}

std::optional<ObjectReader::DictEntries> ObjectReader::dict_entries(std::uint64_t dict, std::size_t max_items) const {
  if (!dict || (types_.dict && type_of(dict) != types_.dict)) return std::nullopt;
  auto keys = memory_.read_u64(dict + offsets_.require("dict.keys"));
  auto values = memory_.read_u64(dict + offsets_.require("dict.values"));
  if (!keys || !values) return std::nullopt;
  auto view = view_keys(*keys, *values);
  if (!view) return std::nullopt;
  return read_entries(*view, *keys, max_items);
}

std::optional<std::uint64_t> ObjectReader::dict_get(std::uint64_t dict, std::string_view key) const {
  auto entries = dict_entries(dict);
  if (!entries) return std::nullopt;
  return find_str_keys(*entries, {key})[0];
}

std::optional<std::uint64_t> ObjectReader::module_global(std::uint64_t interp_ptr, std::string_view module,
                                                         std::string_view name) const {
  auto interp = memory_.read_u64(interp_ptr);
  if (!interp || !*interp) return std::nullopt;
  auto modules = memory_.read_u64(*interp + offsets_.require("interp.modules"));
  if (!modules) return std::nullopt;
  auto found = dict_get(*modules, module);
  if (!found) return std::nullopt;
  auto module_dict = memory_.read_u64(*found + offsets_.require("module.dict"));
  if (!module_dict) return std::nullopt;
  return dict_get(*module_dict, name);
}

std::vector<std::optional<std::uint64_t>> ObjectReader::instance_attrs(
    std::uint64_t obj, const std::vector<std::string_view>& names) const {
  using Found = std::vector<std::optional<std::uint64_t>>;
  const Found none(names.size());
  auto type = type_of(obj);
  if (!type || !*type) return none;
  auto flags = memory_.read_u64(*type + offsets_.require("type.flags"));
  auto dictoffset = memory_.read_value<std::int64_t>(*type + offsets_.require("type.dictoffset"));
  auto basicsize = memory_.read_value<std::int64_t>(*type + offsets_.require("type.basicsize"));
  if (!flags || !dictoffset || !basicsize) return none;

  auto from_values = [&](std::uint64_t values) -> Found {
    // Split values share the keys cached on the heap type (ht_cached_keys).
    auto keys = memory_.read_u64(*type + offsets_.require("heaptype.cached_keys"));
    if (!keys) return none;
    auto view = view_keys(*keys, values);
    auto entries = view ? read_entries(*view, *keys, 1 << 16) : std::nullopt;
    return entries ? find_str_keys(*entries, names) : none;
  };
  auto from_dict = [&](std::uint64_t dict) -> Found {
    auto entries = dict_entries(dict);
    return entries ? find_str_keys(*entries, names) : none;
  };
  auto from_dict_pointer = [&](std::uint64_t where) -> Found {
    auto dict = memory_.read_u64(where);
    if (!dict || !*dict) return none;
    return from_dict(*dict);
  };

  const int minor = version_.major == 3 ? version_.minor : 0;
  if (minor >= 11 && (*flags & kTpFlagsManagedDict)) {
    if (minor >= 13) {
      // 3.13: values inline after the object (Py_TPFLAGS_INLINE_VALUES) unless
      // a dict was materialised; PyDictValues.valid (4th byte) tells which.
      if (*flags & kTpFlagsInlineValues) {
        std::uint64_t values = obj + static_cast<std::uint64_t>(*basicsize);
        auto valid = memory_.read_value<std::uint8_t>(values + 3);
        if (valid && *valid) return from_values(values);
      }
      return from_dict_pointer(obj - 3 * 8);  // _PyObject_ManagedDictPointer
    }
    if (minor == 12) {
      // 3.12: one PyDictOrValues word at obj[-3]. Values are stored as
      // (char *)values - 1, so an odd word means values at word + 1
      // (Include/internal/pycore_object.h _PyDictOrValues_GetValues).
      auto dorv = memory_.read_u64(obj - 3 * 8);
      if (!dorv || !*dorv) return none;
      if (*dorv & 1) return from_values(*dorv + 1);
      return from_dict(*dorv);
    }
    // 3.11: dict pointer at obj[-3] once materialised, else values at obj[-4].
    auto dict = memory_.read_u64(obj - 3 * 8);
    if (!dict) return none;
    if (*dict) return from_dict(*dict);
    auto values = memory_.read_u64(obj - 4 * 8);
    if (!values || !*values) return none;
    return from_values(*values);
  }
  if (*dictoffset > 0) return from_dict_pointer(obj + static_cast<std::uint64_t>(*dictoffset));
  return none;
}

}  // namespace pyebpf::python
