// SPDX-License-Identifier: Apache-2.0
#include "sinks/schema.hpp"

#include <stdexcept>

namespace pyebpf::sinks {

TableSchema::TableSchema(std::string metric, std::string table, Prefix prefix)
    : metric_(std::move(metric)), table_(std::move(table)), prefix_(prefix) {
  using T = ColumnType;
  if (prefix == Prefix::None) return;
  add("env", T::Symbol);
  add("ts", T::Time);
  add("ts_us", T::Int64);
  if (prefix == Prefix::Host) return;
  add("pid", T::UInt32);
  add("tid", T::UInt32);
  add("container_pid", T::UInt32);
  add("container_tid", T::UInt32);
  add("comm", T::Symbol);
  add("thread_name", T::Symbol);
}

FieldId TableSchema::add(std::string name, ColumnType type, bool nullable) {
  if (find(name)) throw std::logic_error("schema " + metric_ + ": field " + name + " defined twice");
  columns_.push_back({std::move(name), type, nullable});
  return static_cast<FieldId>(columns_.size() - 1);
}

std::optional<FieldId> TableSchema::find(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return static_cast<FieldId>(i);
  }
  return std::nullopt;
}

}  // namespace pyebpf::sinks
