// SPDX-License-Identifier: Apache-2.0
#include "python/offsets.hpp"

#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <tuple>

#include "pyebpf/error.hpp"

namespace pyebpf::embedded {
extern const unsigned char cpython_offsets_json[];
extern const std::size_t cpython_offsets_json_size;
}  // namespace pyebpf::embedded

namespace pyebpf::python {
namespace {

std::pair<int, int> parse_minor(const std::string& minor) {
  std::size_t dot = minor.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == minor.size())
    throw Error("offsets table: bad minor version '" + minor + "'");
  return {std::stoi(minor.substr(0, dot)), std::stoi(minor.substr(dot + 1))};
}

// "3.14.10", "3.15.0b4" (as the generator writes it from PY_VERSION_HEX).
PyVersion parse_python(const std::string& text, const std::string& minor) {
  auto [major, minor_number] = parse_minor(minor);
  PyVersion v{major, minor_number, -1, ""};
  std::string prefix = minor + ".";
  if (!text.starts_with(prefix)) throw Error("offsets table: version " + text + " is not a " + minor + " release");
  std::size_t end = prefix.size();
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == prefix.size()) throw Error("offsets table: bad version '" + text + "'");
  v.micro = std::stoi(text.substr(prefix.size(), end - prefix.size()));
  v.release = text.substr(end);
  return v;
}

OffsetsRow parse_row(const std::string& label, const nlohmann::json& row_json) {
  OffsetsRow row;
  row.label = label;
  row.minor = row_json.at("minor").get<std::string>();
  const auto& from = row_json.at("derived_from");
  row.python = parse_python(from.at("python").get<std::string>(), row.minor);
  row.build_id = from.value("build_id", "");
  row.derived_from = from.value("python", "?") + " (" + from.value("file", "?") + ", " + from.value("source", "?") +
                     ", build-id " + from.value("build_id", "?") + ")";
  for (const auto& [name, f] : row_json.at("fields").items()) {
    row.fields[name] = f.at("offset").get<std::uint32_t>();
    row.members[name] = f.value("member", "");
  }
  for (const auto& [name, size] : row_json.at("sizes").items()) row.sizes[name] = size.get<std::uint64_t>();
  for (const auto& [name, b] : row_json.at("bits").items())
    row.bits[name] = BitField{b.at("bit").get<unsigned>(), b.at("width").get<unsigned>()};
  for (const auto& [name, c] : row_json.at("constants").items()) row.constants[name] = c.get<std::int64_t>();
  if (row_json.contains("arrays")) {
    for (const auto& [name, n] : row_json.at("arrays").items()) row.arrays[name] = n.get<std::uint32_t>();
  }
  if (row_json.contains("debug_offsets")) {
    const auto& d = row_json.at("debug_offsets");
    DebugOffsetsLayout debug;
    debug.size = d.at("size").get<std::uint32_t>();
    debug.cookie_at = d.at("cookie_at").get<std::uint32_t>();
    debug.version_at = d.at("version_at").get<std::uint32_t>();
    if (d.contains("free_threaded_at")) debug.free_threaded_at = d.at("free_threaded_at").get<std::uint32_t>();
    for (const auto& [name, f] : d.at("fields").items()) debug.fields[name] = f.at("at").get<std::uint32_t>();
    for (const auto& [name, f] : d.at("sizes").items()) debug.sizes[name] = f.at("at").get<std::uint32_t>();
    row.debug_offsets = std::move(debug);
  }
  return row;
}

std::tuple<int, int, int> version_key(const PyVersion& v) {
  return {v.major, v.minor, v.micro};
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

std::optional<std::uint32_t> OffsetsRow::array_length(std::string_view name) const {
  auto it = arrays.find(name);
  if (it == arrays.end()) return std::nullopt;
  return it->second;
}

OffsetsTable OffsetsTable::parse(std::string_view text) {
  OffsetsTable table;
  try {
    auto doc = nlohmann::json::parse(text);
    if (doc.at("schema").get<int>() != 2) throw Error("offsets table: unsupported schema");
    for (const auto& [label, row_json] : doc.at("builds").items()) table.rows_.push_back(parse_row(label, row_json));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("offsets table is malformed: ") + e.what());
  }
  std::sort(table.rows_.begin(), table.rows_.end(), [](const OffsetsRow& a, const OffsetsRow& b) {
    return std::tie(a.python.major, a.python.minor, a.python.micro, a.label) <
           std::tie(b.python.major, b.python.minor, b.python.micro, b.label);
  });
  return table;
}

const OffsetsTable& OffsetsTable::embedded() {
  static const OffsetsTable table = parse(std::string_view(
      reinterpret_cast<const char*>(embedded::cpython_offsets_json), embedded::cpython_offsets_json_size));
  return table;
}

const OffsetsRow* OffsetsTable::select(const PyVersion& version, std::string_view build_id) const {
  const OffsetsRow* older = nullptr;  // newest row not newer than the target
  const OffsetsRow* newer = nullptr;  // oldest row newer than the target
  for (const auto& row : rows_) {
    if (row.python.major != version.major || row.python.minor != version.minor) continue;
    if (!build_id.empty() && row.build_id == build_id) return &row;
    if (version.micro < 0 || version_key(row.python) <= version_key(version)) {
      older = &row;
    } else if (!newer) {
      newer = &row;
    }
  }
  return older ? older : newer;
}

std::vector<std::string> OffsetsTable::minors() const {
  std::vector<std::string> out;
  for (const auto& row : rows_) {
    if (std::find(out.begin(), out.end(), row.minor) == out.end()) out.push_back(row.minor);
  }
  return out;
}

std::string OffsetsTable::minors_text() const {
  return fmt::format("{}", fmt::join(minors(), ", "));
}

}  // namespace pyebpf::python
