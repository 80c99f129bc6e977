// SPDX-License-Identifier: Apache-2.0
// What pyebpf says to ClickHouse: table DDL per server version, events as
// JSONEachRow rows, and how to read an error. Pure functions, unit-tested;
// the HTTP side is in clickhouse_sink.*.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinks/json_writer.hpp"
#include "sinks/record.hpp"
#include "sinks/schema.hpp"

namespace pyebpf::sinks::clickhouse {

struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string text;  // as the server said it ("18.16.1", "24.8.4.13")
  // Parses `SELECT version()` output; nullopt if it is not "<major>.<minor>...".
  static std::optional<ServerVersion> parse(std::string_view text);
};

// Types chosen for the server. Debian 12's ClickHouse is 18.16: no
// DateTime64 (20.1+) and LowCardinality only behind an experimental setting
// (stable and default in 20.1+ too). So: one cut at 20.1.
struct Dialect {
  bool datetime64 = false;       // DateTime64(6, 'UTC'); else DateTime('UTC') (+ the ts_us column keeps µs)
  bool low_cardinality = false;  // LowCardinality(String) for Symbol columns; else String
  static Dialect for_version(const ServerVersion& version);
  std::string describe() const;
};

// The columns of a table as ClickHouse sees them: the schema's, with `host`
// (the machine pyebpf runs on) after `env`, and `extra` last (a JSON object
// with the fields the schema does not know or that did not fit their column).
std::vector<std::pair<std::string, std::string>> table_columns(const TableSchema& table, const Dialect& dialect);

std::string quote_ident(std::string_view name);  // `name`, backticks escaped
std::string qualified(std::string_view database, std::string_view table);
// CREATE TABLE IF NOT EXISTS ...: MergeTree partitioned by day, sorted by
// (env, host, ts): one part per day and table per insert, never a part
// explosion.
std::string create_table_sql(const TableSchema& table, std::string_view database, const Dialect& dialect);
std::string add_column_sql(std::string_view database, std::string_view table, std::string_view column,
                           std::string_view type);
std::string insert_sql(std::string_view database, std::string_view table);

// "2026-11-29T16:14:43.529837Z" -> "2026-11-29 16:14:43.529837" (micros) or
// "2026-11-29 16:14:43"; also takes the space-separated form. nullopt if not a time.
std::optional<std::string> clickhouse_time(std::string_view iso, bool micros);

// Encodes records of one table as JSONEachRow lines, from their typed
// values: times in the dialect's format, stacks as text (Python) or arrays
// (native), JSON fields as strings. A number out of its column's range (a
// bug, or a field that grew) goes to `extra` instead, so a row never fails
// because of one value.
class RowEncoder {
 public:
  RowEncoder(const TableSchema& table, const Dialect& dialect, std::string host);
  std::string encode(const Record& record);

 private:
  // The field's value in ClickHouse's form; false when it is out of the
  // column's range.
  bool append_value(std::string& out, const Record& record, FieldId field, const Column& column);

  const TableSchema& table_;
  Dialect dialect_;
  std::string host_;
  JsonWriter json_;
};

// What a failed request means for the rows in it.
enum class Failure {
  Data,          // the rows: parse/type errors. Bisect, drop only the bad rows.
  MissingTable,  // table or database gone: create it again, then retry
  Transient,     // network, overload, auth, read-only: keep the rows, retry with backoff
  Unknown,       // another server error: retry a few times, then treat as Data
};
Failure classify(long http_status, std::string_view body);
// The "Code: NN" of a ClickHouse exception text; -1 if none.
int exception_code(std::string_view body);

}  // namespace pyebpf::sinks::clickhouse
