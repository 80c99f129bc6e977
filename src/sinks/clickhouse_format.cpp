// SPDX-License-Identifier: Apache-2.0
#include "sinks/clickhouse_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>

namespace pyebpf::sinks::clickhouse {
namespace {

using Json = Event;

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Integer value of `v` if it is a whole number in [lo, hi].
std::optional<Json> integer_in(const Json& v, long double lo, long double hi) {
  long double x;
  if (v.is_boolean()) return Json(v.get<bool>() ? 1 : 0);
  if (v.is_number_unsigned()) {
    x = static_cast<long double>(v.get<std::uint64_t>());
    if (x > hi) return std::nullopt;
    return v;
  }
  if (v.is_number_integer()) {
    x = static_cast<long double>(v.get<std::int64_t>());
    if (x < lo || x > hi) return std::nullopt;
    return v;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) return std::nullopt;
    x = std::llround(d);
    if (static_cast<long double>(d) < lo - 0.5L || static_cast<long double>(d) > hi + 0.5L) return std::nullopt;
    if (x < 0) return Json(static_cast<std::int64_t>(std::llround(d)));
    return Json(static_cast<std::uint64_t>(std::llround(d)));
  }
  return std::nullopt;
}

std::string as_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `v` as a value of column type `type`, or nullopt if it does not fit.
std::optional<Json> coerce(const Json& v, ColumnType type, const Dialect& d) {
  constexpr long double u64max = static_cast<long double>(std::numeric_limits<std::uint64_t>::max());
  constexpr long double i64min = static_cast<long double>(std::numeric_limits<std::int64_t>::min());
  constexpr long double i64max = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
  switch (type) {
    case ColumnType::Time: {
      if (!v.is_string()) return std::nullopt;
      auto t = clickhouse_time(v.get<std::string>(), d.datetime64);
      if (!t) return std::nullopt;
      return Json(*t);
    }
    case ColumnType::String:
    case ColumnType::Symbol:
    case ColumnType::Json:
      return Json(as_text(v));
    case ColumnType::UInt8:
      return integer_in(v, 0, 255);
    case ColumnType::UInt16:
      return integer_in(v, 0, 65535);
    case ColumnType::UInt32:
      return integer_in(v, 0, 4294967295.0L);
    case ColumnType::UInt64:
      return integer_in(v, 0, u64max);
    case ColumnType::Int32:
      return integer_in(v, -2147483648.0L, 2147483647.0L);
    case ColumnType::Int64:
      return integer_in(v, i64min, i64max);
    case ColumnType::Float64:
      if (v.is_boolean()) return Json(v.get<bool>() ? 1.0 : 0.0);
      if (v.is_number() && std::isfinite(v.get<double>())) return v;
      return std::nullopt;
    case ColumnType::Bool:
      if (v.is_boolean()) return Json(v.get<bool>() ? 1 : 0);
      if (v.is_number()) return Json(v.get<double>() != 0 ? 1 : 0);
      return std::nullopt;
    case ColumnType::StringArray: {
      if (!v.is_array()) return std::nullopt;
      Json out = Json::array();
      for (const auto& item : v) out.push_back(as_text(item));
      return out;
    }
  }
  return std::nullopt;
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
  for (const auto& c : table.columns) {
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
  std::string sql = "CREATE TABLE IF NOT EXISTS " + qualified(database, table.table) + " (";
  bool first = true;
  for (const auto& [name, type] : table_columns(table, d)) {
    sql += (first ? "" : ", ") + quote_ident(name) + " " + type;
    first = false;
  }
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
    : table_(table), dialect_(dialect), host_(std::move(host)) {
  for (const auto& c : table_.columns) by_name_.emplace(c.name, &c);
}

namespace {

// True when `v` can go into a column of `type` unchanged (the common case:
// no copy, no conversion).
bool fits_as_is(const Json& v, ColumnType type) {
  switch (type) {
    case ColumnType::String:
    case ColumnType::Symbol:
    case ColumnType::Json:
      return v.is_string();
    case ColumnType::Float64:
      return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()));
    case ColumnType::StringArray:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_string(); });
    case ColumnType::UInt64:
      return v.is_number_unsigned();
    case ColumnType::Int64:
      return v.is_number_integer() && (!v.is_number_unsigned() || v.get<std::uint64_t>() <= INT64_MAX);
    default:
      return false;  // range checks, times, bools: coerce()
  }
}

}  // namespace

std::string RowEncoder::encode(Event event) const {
  Json extra = Json::object();
  std::vector<std::string> remove;
  for (auto it = event.begin(); it != event.end(); ++it) {
    const std::string& key = it.key();
    Json& value = it.value();
    if (key == "metric") {
      remove.push_back(key);
      continue;
    }
    auto col = by_name_.find(key);
    if (col == by_name_.end() || key == "host" || key == "extra") {
      extra[key] = std::move(value);
      remove.push_back(key);
      continue;
    }
    const Column& c = *col->second;
    if (value.is_null()) {
      if (!c.nullable) remove.push_back(key);
      continue;
    }
    if (fits_as_is(value, c.type)) continue;
    if (auto v = coerce(value, c.type, dialect_)) {
      value = std::move(*v);
    } else {
      extra[key] = std::move(value);
      remove.push_back(key);
    }
  }
  for (const auto& key : remove) event.erase(key);
  event["host"] = host_;
  if (!extra.empty()) event["extra"] = extra.dump(-1, ' ', false, Json::error_handler_t::replace);
  return event.dump(-1, ' ', false, Json::error_handler_t::replace);
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
