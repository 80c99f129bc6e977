// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pyebpf::sinks {

// The logical type of a column, mapped to a ClickHouse type (per server
// version) and to a SQLite type. Values in events are JSON; each sink coerces
// them to the column's type and keeps what does not fit in `extra`, so a field
// a tracker adds or changes later never fails an insert.
enum class ColumnType {
  Time,    // ISO-8601 UTC string ("2026-11-29T16:14:43.529837Z")
  String,  // free text (stacks, paths)
  Symbol,  // short string with few distinct values (comm, outcome, state)
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Int32,
  Int64,
  Float64,
  Bool,
  StringArray,  // JSON array of strings (kernel/user stacks, warnings)
  Json,         // any JSON (lists of objects): ClickHouse String holding the JSON, SQLite JSON
};

struct Column {
  std::string name;
  ColumnType type;
  bool nullable = false;  // absent differs from zero (e.g. gc `collected` where the hook cannot see it)
};

// One table per metric, named as in the original tool.
struct TableSchema {
  std::string metric;
  std::string table;
  std::vector<Column> columns;  // in event order; `metric` itself is not a column
  bool known = true;            // false: a metric no schema describes (generic columns only)
};

// The nine tables (ebpf_py_stacks, ebpf_gil_wait, ...).
const std::vector<TableSchema>& known_tables();

// The schema for `metric`: a known one, or for a metric without one a generic
// `ebpf_<metric>` table with the common columns, so nothing is ever lost.
const TableSchema& table_for(std::string_view metric);

// A metric name made safe as a table-name suffix ([a-z0-9_], at most 48 chars).
std::string table_name_for_metric(std::string_view metric);

// The column events of any metric are sorted by in the report and databases.
inline constexpr const char* kTimeColumn = "ts";
inline constexpr const char* kTimeUsColumn = "ts_us";

}  // namespace pyebpf::sinks
