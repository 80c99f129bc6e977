// SPDX-License-Identifier: Apache-2.0
#include "python/offsets.hpp"

#include <fmt/ranges.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "pyebpf/error.hpp"

namespace pyebpf::embedded {
extern const unsigned char cpython_offsets_json[];
extern const std::size_t cpython_offsets_json_size;
}  // namespace pyebpf::embedded

namespace pyebpf::python {
namespace {

std::pair<int, int> parse_minor(const std::string& minor) {
  std::size_t dot = minor.find('.');
  if (dot == std::string::npos) throw Error("offsets table: bad version key '" + minor + "'");
  return {std::stoi(minor.substr(0, dot)), std::stoi(minor.substr(dot + 1))};
}

}  // namespace

std::optional<std::uint32_t> OffsetsRow::field(std::string_view name) const {
  auto it = fields.find(name);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::uint32_t OffsetsRow::require(std::string_view name) const {
  if (auto v = field(name)) return *v;
  throw Error("offsets table row " + minor + " has no field '" + std::string(name) + "'",
              "regenerate offsets/cpython.json with tools/gen-offsets");
}

std::optional<std::uint64_t> OffsetsRow::size(std::string_view type) const {
  auto it = sizes.find(type);
  if (it == sizes.end()) return std::nullopt;
  return it->second;
}

std::optional<BitField> OffsetsRow::bit(std::string_view name) const {
  auto it = bits.find(name);
  if (it == bits.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> OffsetsRow::constant(std::string_view name) const {
  auto it = constants.find(name);
  if (it == constants.end()) return std::nullopt;
  return it->second;
}

std::string OffsetsRow::member(std::string_view name) const {
  auto it = members.find(name);
  return it == members.end() ? std::string() : it->second;
}

OffsetsTable OffsetsTable::parse(std::string_view text) {
  OffsetsTable table;
  try {
    auto doc = nlohmann::json::parse(text);
    if (doc.at("schema").get<int>() != 1) throw Error("offsets table: unsupported schema");
    for (const auto& [minor, row_json] : doc.at("versions").items()) {
      OffsetsRow row;
      row.minor = minor;
      parse_minor(minor);
      const auto& from = row_json.at("derived_from");
      row.derived_from = from.value("python", "?") + " (" + from.value("file", "?") + ", build-id " +
                         from.value("build_id", "?") + ")";
      for (const auto& [name, f] : row_json.at("fields").items()) {
        row.fields[name] = f.at("offset").get<std::uint32_t>();
        row.members[name] = f.value("member", "");
      }
      for (const auto& [name, size] : row_json.at("sizes").items()) row.sizes[name] = size.get<std::uint64_t>();
      for (const auto& [name, b] : row_json.at("bits").items())
        row.bits[name] = BitField{b.at("bit").get<unsigned>(), b.at("width").get<unsigned>()};
      for (const auto& [name, c] : row_json.at("constants").items()) row.constants[name] = c.get<std::int64_t>();
      if (row_json.contains("debug_offsets")) {
        const auto& d = row_json.at("debug_offsets");
        DebugOffsetsLayout debug;
        debug.size = d.at("size").get<std::uint32_t>();
        debug.cookie_at = d.at("cookie_at").get<std::uint32_t>();
        debug.version_at = d.at("version_at").get<std::uint32_t>();
        for (const auto& [name, f] : d.at("fields").items()) debug.fields[name] = f.at("at").get<std::uint32_t>();
        for (const auto& [name, f] : d.at("sizes").items()) debug.sizes[name] = f.at("at").get<std::uint32_t>();
        row.debug_offsets = std::move(debug);
      }
      table.rows_.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("offsets table is malformed: ") + e.what());
  }
  std::sort(table.rows_.begin(), table.rows_.end(),
            [](const OffsetsRow& a, const OffsetsRow& b) { return parse_minor(a.minor) < parse_minor(b.minor); });
  return table;
}

const OffsetsTable& OffsetsTable::embedded() {
  static const OffsetsTable table = parse(std::string_view(
      reinterpret_cast<const char*>(embedded::cpython_offsets_json), embedded::cpython_offsets_json_size));
  return table;
}

const OffsetsRow* OffsetsTable::find(int major, int minor) const {
  for (const auto& row : rows_) {
    if (parse_minor(row.minor) == std::make_pair(major, minor)) return &row;
  }
  return nullptr;
}

std::vector<std::string> OffsetsTable::minors() const {
  std::vector<std::string> out;
  for (const auto& row : rows_) out.push_back(row.minor);
  return out;
}

std::string OffsetsTable::minors_text() const {
  return fmt::format("{}", fmt::join(minors(), ", "));
}

}  // namespace pyebpf::python
