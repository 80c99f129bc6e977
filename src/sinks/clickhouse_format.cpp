// SPDX-License-Identifier: Apache-2.0
#include "sinks/clickhouse_format.hpp"

#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>

#include "sinks/json_writer.hpp"
#include "util/clock.hpp"

namespace pyebpf::sinks::clickhouse {
namespace {

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The range of an integer column; false for other types.
bool integer_range(ColumnType type, long double& lo, long double& hi) {
  switch (type) {
    case ColumnType::UInt8:
      lo = 0, hi = 255;
      return true;
    case ColumnType::UInt16:
      lo = 0, hi = 65535;
      return true;
    case ColumnType::UInt32:
      lo = 0, hi = 4294967295.0L;
      return true;
    case ColumnType::UInt64:
      lo = 0, hi = static_cast<long double>(std::numeric_limits<std::uint64_t>::max());
      return true;
    case ColumnType::Int32:
      lo = -2147483648.0L, hi = 2147483647.0L;
      return true;
    case ColumnType::Int64:
      lo = static_cast<long double>(std::numeric_limits<std::int64_t>::min());
      hi = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
      return true;
    default:
      return false;
  }
}

// The next key of the JSON object `out` holds from its '{' on.
void append_key(std::string& out, const std::string& name) {
  if (out.size() > 1) out += ',';
  append_json_string(out, name);
  out += ':';
}

}  // namespace

std::optional<ServerVersion> ServerVersion::parse(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major = text.substr(0, dot);
  auto rest = text.substr(dot + 1);
  auto minor = rest.substr(0, rest.find('.'));
  if (!digits(major) || !digits(minor) || major.size() > 4 || minor.size() > 4) return std::nullopt;
  return ServerVersion{std::stoi(std::string(major)), std::stoi(std::string(minor)), std::string(text)};
}

Dialect Dialect::for_version(const ServerVersion& v) {
  bool modern = v.major > 20 || (v.major == 20 && v.minor >= 1);
  return {modern, modern};
}

std::string Dialect::describe() const {
  return std::string(datetime64 ? "DateTime64(6)" : "DateTime + ts_us") + ", " +
         (low_cardinality ? "LowCardinality strings" : "plain strings");
}

namespace {

std::string type_sql(const Column& c, const Dialect& d) {
  std::string t;
  switch (c.type) {
    case ColumnType::Time:
      t = d.datetime64 ? "DateTime64(6, 'UTC')" : "DateTime('UTC')";
      break;
    case ColumnType::String:
    case ColumnType::PyStack:  // as its text
      t = "String";
      break;
    case ColumnType::Symbol:
      t = d.low_cardinality ? "LowCardinality(String)" : "String";
      break;
    case ColumnType::UInt8:
      t = "UInt8";
      break;
    case ColumnType::UInt16:
      t = "UInt16";
      break;
    case ColumnType::UInt32:
      t = "UInt32";
      break;
    case ColumnType::UInt64:
      t = "UInt64";
      break;
    case ColumnType::Int32:
      t = "Int32";
      break;
    case ColumnType::Int64:
      t = "Int64";
      break;
    case ColumnType::Float64:
      t = "Float64";
      break;
    case ColumnType::Bool:
      t = "UInt8";
      break;
    case ColumnType::StringArray:
    case ColumnType::NativeStack:  // frame texts
      t = "Array(String)";
      break;
    case ColumnType::Json:
      t = "String";
      break;
  }
  // LowCardinality(Nullable(...)) is the only allowed nesting; Symbol columns are never nullable.
  return c.nullable ? "Nullable(" + t + ")" : t;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> table_columns(const TableSchema& table, const Dialect& d) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : table.columns()) {
    out.emplace_back(c.name, type_sql(c, d));
    if (c.name == "env") out.emplace_back("host", type_sql({"host", ColumnType::Symbol}, d));
  }
  out.emplace_back("extra", "String");
  return out;
}

std::string quote_ident(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`' || c == '\\') out += '\\';
    out += c;
  }
  return out + "`";
}

std::string qualified(std::string_view database, std::string_view table) {
  return quote_ident(database) + "." + quote_ident(table);
}

std::string create_table_sql(const TableSchema& table, std::string_view database, const Dialect& d) {
  std::vector<std::string> columns;
  for (const auto& [name, type] : table_columns(table, d)) columns.push_back(quote_ident(name) + " " + type);
  std::string sql =
      fmt::format("CREATE TABLE IF NOT EXISTS {} ({}", qualified(database, table.table()), fmt::join(columns, ", "));
  sql += ") ENGINE = MergeTree PARTITION BY toYYYYMMDD(ts) ORDER BY (env, host, ts)";
  return sql;
}

std::string add_column_sql(std::string_view database, std::string_view table, std::string_view column,
                           std::string_view type) {
  return "ALTER TABLE " + qualified(database, table) + " ADD COLUMN " + quote_ident(column) + " " + std::string(type);
}

std::string insert_sql(std::string_view database, std::string_view table) {
  return "INSERT INTO " + qualified(database, table) + " FORMAT JSONEachRow";
}

std::optional<std::string> clickhouse_time(std::string_view iso, bool micros) {
  // YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z]
  if (iso.size() < 19) return std::nullopt;
  static constexpr const char* shape = "dddd-dd-dd?dd:dd:dd";
  for (std::size_t i = 0; i < 19; ++i) {
    char want = shape[i];
    char c = iso[i];
    if (want == 'd' && !(c >= '0' && c <= '9')) return std::nullopt;
    if (want == '-' && c != '-') return std::nullopt;
    if (want == ':' && c != ':') return std::nullopt;
    if (want == '?' && c != 'T' && c != ' ') return std::nullopt;
  }
  std::string out(iso.substr(0, 19));
  out[10] = ' ';
  std::string_view rest = iso.substr(19);
  std::string fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      fraction += rest.front();
      rest.remove_prefix(1);
    }
    if (fraction.empty()) return std::nullopt;
  }
  if (rest == "Z" || rest == "+00:00") rest = {};
  if (!rest.empty()) return std::nullopt;  // other zones: not what pyebpf writes
  if (micros) {
    fraction.resize(6, '0');
    out += "." + fraction;
  }
  return out;
}

RowEncoder::RowEncoder(const TableSchema& table, const Dialect& dialect, std::string host)
    : table_(table), dialect_(dialect), host_(std::move(host)) {}

bool RowEncoder::append_value(std::string& out, const Record& r, FieldId f, const Column& c) {
  using K = Record::Kind;
  const K kind = r.kind(f);
  bool fits = true;
  // ClickHouse's forms where they differ from JSON lines: times in the
  // dialect's format, booleans as UInt8, JSON values as their text.
  switch (kind) {
    case K::UInt:
    case K::Int: {
      long double lo = 0, hi = 0,
                  v = kind == K::UInt ? static_cast<long double>(r.uint_value(f))
                                      : static_cast<long double>(r.int_value(f));
      fits = integer_range(c.type, lo, hi) && v >= lo && v <= hi;
      json_.append_value(out, r, f);
      break;
    }
    case K::Float:
      fits = std::isfinite(r.float_value(f));
      json_.append_value(out, r, f);
      break;
    case K::Bool:
      out += r.bool_value(f) ? "1" : "0";
      break;
    case K::Text:
      if (c.type == ColumnType::Time) {
        auto t = clickhouse_time(r.text(f), dialect_.datetime64);
        fits = t.has_value();
        append_json_string(out, t ? *t : std::string(r.text(f)));
      } else {
        json_.append_value(out, r, f);
      }
      break;
    case K::Time: {
      std::string iso;
      append_iso8601_utc(iso, r.time_us(f));
      append_json_string(out, *clickhouse_time(iso, dialect_.datetime64));
      break;
    }
    case K::Json:
      append_json_string(out, r.json(f).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
      break;
    default:  // null, texts and stacks: as in JSON lines
      json_.append_value(out, r, f);
      break;
  }
  return fits;
}

std::string RowEncoder::encode(const Record& r) {
  std::string row = "{", extra;
  const auto& columns = table_.columns();
  for (FieldId f = 0; f < columns.size(); ++f) {
    const Column& c = columns[f];
    if (r.kind(f) == Record::Kind::Absent) continue;
    const std::size_t field_start = row.size();
    append_key(row, c.name);
    const std::size_t value_start = row.size();
    if (!append_value(row, r, f, c)) {
      // Out of the column's range: kept in `extra`, the column takes its default.
      std::string value = row.substr(value_start);
      row.resize(field_start);
      if (extra.empty()) extra = "{";
      append_key(extra, c.name);
      extra += value;
    }
    if (c.name == "env") {
      append_key(row, "host");
      append_json_string(row, host_);
    }
  }
  if (!extra.empty()) {
    append_key(row, "extra");
    append_json_string(row, extra + "}");
  }
  row += '}';
  return row;
}

int exception_code(std::string_view body) {
  static const std::regex code(R"(Code: (\d+))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(body.begin(), body.end(), m, code)) return -1;
  return std::stoi(m[1].str());
}

Failure classify(long status, std::string_view body) {
  if (status == 0) return Failure::Transient;  // no answer: network, timeout
  int code = exception_code(body);
  switch (code) {
    // Parse and type errors in the rows (ErrorCodes.cpp names).
    case 6:    // CANNOT_PARSE_TEXT
    case 25:   // CANNOT_PARSE_ESCAPE_SEQUENCE
    case 26:   // CANNOT_PARSE_QUOTED_STRING
    case 27:   // CANNOT_PARSE_INPUT_ASSERTION_FAILED
    case 32:   // ATTEMPT_TO_READ_AFTER_EOF
    case 33:   // CANNOT_READ_ALL_DATA
    case 36:   // BAD_ARGUMENTS
    case 38:   // CANNOT_PARSE_DATE
    case 41:   // CANNOT_PARSE_DATETIME
    case 43:   // ILLEGAL_TYPE_OF_ARGUMENT
    case 49:   // LOGICAL_ERROR: 18.16 reports an unknown Enum element with it
    case 53:   // TYPE_MISMATCH
    case 69:   // ARGUMENT_OUT_OF_BOUND
    case 70:   // CANNOT_CONVERT_TYPE
    case 72:   // CANNOT_PARSE_NUMBER
    case 117:  // INCORRECT_DATA
    case 130:  // CANNOT_READ_ARRAY_FROM_TEXT
    case 131:  // TOO_LARGE_STRING_SIZE
    case 349:  // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
    case 691:  // UNKNOWN_ELEMENT_OF_ENUM
      return Failure::Data;
    case 60:  // UNKNOWN_TABLE
    case 81:  // UNKNOWN_DATABASE
      return Failure::MissingTable;
    case 159:  // TIMEOUT_EXCEEDED
    case 164:  // READONLY
    case 192:  // UNKNOWN_USER
    case 193:  // WRONG_PASSWORD
    case 194:  // REQUIRED_PASSWORD
    case 202:  // TOO_MANY_SIMULTANEOUS_QUERIES
    case 203:  // NO_FREE_CONNECTION
    case 209:  // SOCKET_TIMEOUT
    case 210:  // NETWORK_ERROR
    case 236:  // ABORTED
    case 241:  // MEMORY_LIMIT_EXCEEDED
    case 242:  // TABLE_IS_READ_ONLY
    case 252:  // TOO_MANY_PARTS
    case 285:  // TOO_FEW_LIVE_REPLICAS
    case 319:  // UNKNOWN_STATUS_OF_INSERT
    case 497:  // ACCESS_DENIED
    case 516:  // AUTHENTICATION_FAILED
      return Failure::Transient;
    default:
      break;
  }
  if (status == 401 || status == 403 || status == 408 || status == 429 || status >= 502) return Failure::Transient;
  return Failure::Unknown;
}

}  // namespace pyebpf::sinks::clickhouse
