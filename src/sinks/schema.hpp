// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pyebpf::sinks {

// The logical type of a field: how its value is written in JSON lines, and
// the column type in ClickHouse (per server version) and SQLite.
enum class ColumnType {
  Time,    // ISO-8601 UTC string ("2026-11-29T16:14:43.529837Z")
  String,  // free text (paths, addresses)
  Symbol,  // short string with few distinct values (comm, outcome, state)
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Int32,
  Int64,
  Float64,
  Bool,
  StringArray,  // list of strings (warnings)
  Json,         // any JSON (lists of objects): ClickHouse String holding the JSON, SQLite JSON
  PyStack,      // Python frames; text "func (file:line);..." root first (a String column)
  NativeStack,  // native or kernel frames; a list of frame texts root first (an Array(String) column)
};

struct Column {
  std::string name;
  ColumnType type;
  bool nullable = false;  // written as null when unknown (e.g. handshake_us of a failed connect)
};

// Index of a field in its schema: how decoders set values and sinks read
// them, without looking names up per event.
using FieldId = std::uint16_t;

// Fields every thread-level event starts with (after "metric"), in this
// order; their ids are the same in every schema that starts with them.
namespace thread_fields {
inline constexpr FieldId env = 0, ts = 1, ts_us = 2, pid = 3, tid = 4, container_pid = 5, container_tid = 6, comm = 7,
                         thread_name = 8;
}
// Fields every host-level event starts with (request_queue, host_net_health).
namespace host_fields {
inline constexpr FieldId env = 0, ts = 1, ts_us = 2;
}

// The typed fields of one metric, in the order JSON lines print them, and the
// table it is stored in (named as in the original tool). Each tracker defines
// its schemas next to its decoder, as a struct derived from this one whose
// members are the ids of the fields it adds:
//
//   struct GcPauseSchema : sinks::TableSchema {
//     GcPauseSchema() : TableSchema("gc_pause", "ebpf_gc_pause", Prefix::Thread) {}
//     const sinks::FieldId duration_ms = add("duration_ms", sinks::ColumnType::Float64);
//   };
//
// so a field's name is spelled once, and a decoder cannot set a field its
// schema lacks.
class TableSchema {
 public:
  enum class Prefix { None, Thread, Host };
  TableSchema(std::string metric, std::string table, Prefix prefix);
  TableSchema(const TableSchema&) = delete;
  TableSchema& operator=(const TableSchema&) = delete;
  virtual ~TableSchema() = default;

  const std::string& metric() const { return metric_; }
  const std::string& table() const { return table_; }
  Prefix prefix() const { return prefix_; }
  const std::vector<Column>& columns() const { return columns_; }
  const Column& column(FieldId id) const { return columns_[id]; }
  std::optional<FieldId> find(std::string_view name) const;

 protected:
  FieldId add(std::string name, ColumnType type, bool nullable = false);

 private:
  std::string metric_;
  std::string table_;
  Prefix prefix_;
  std::vector<Column> columns_;
};

// The column events of any metric are sorted by in the report and databases.
inline constexpr const char* kTimeColumn = "ts";
inline constexpr const char* kTimeUsColumn = "ts_us";

}  // namespace pyebpf::sinks
