// SPDX-License-Identifier: Apache-2.0
#include "sinks/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "pyebpf/error.hpp"
#include "sinks/json_writer.hpp"
#include "sinks/schema.hpp"
#include "util/clock.hpp"

namespace pyebpf::sinks {
namespace {

std::string quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

const char* sql_type(ColumnType t) {
  switch (t) {
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64:
    case ColumnType::Int32:
    case ColumnType::Int64:
      return "INTEGER";
    case ColumnType::Float64:
      return "REAL";
    case ColumnType::Bool:
      return "BOOLEAN";
    case ColumnType::StringArray:
    case ColumnType::NativeStack:
    case ColumnType::Json:
      return "JSON";
    default:
      return "TEXT";
  }
}

// SQLite column names are case-insensitive: so is the lookup. Field names
// are lower case already; only the others pay for a copy.
std::string lower(const std::string& name) {
  if (std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) return name;
  std::string out = name;
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error(std::string("SQLite: ") + sqlite3_errmsg(db) + " in: " + sql);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  sqlite3_stmt* get() const { return stmt_; }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("SQLite: ") + sqlite3_errmsg(sqlite3_db_handle(stmt_)));
  }
  std::string text(int i) const {
    auto* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// Temporaries are copied.
void bind_copy(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// Text bound without a copy (SQLITE_STATIC) lives in the record, which
// outlives the step; composed text (stacks, times) is copied (bind_copy).
void bind_view(sqlite3_stmt* s, int i, std::string_view text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

SqliteStore::SqliteStore(const std::string& path, Mode mode) : path_(path) {
  int flags = mode == Mode::Write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("cannot open SQLite file " + path + ": " + msg,
                mode == Mode::Write ? "check the directory exists and is writable" : "check the path");
  }
  // A reader waits for a writer's checkpoint instead of failing at once.
  sqlite3_busy_timeout(db_, 5000);
  if (mode == Mode::Read) {
    try {
      Statement check(db_, "SELECT count(*) FROM sqlite_master WHERE name = 'pyebpf_runs'");
      if (!check.step() || sqlite3_column_int(check.get(), 0) == 0)
        throw Error(path + " holds no pyebpf run", "write one with: pyebpf -p PID -e ENV --sqlite " + path);
      // pyebpf writes plain columns only. A generated one is an expression SQLite
      // evaluates for every row read: a crafted file made the report print a
      // gigabyte per row (2.6 GB, 24 s for three rows).
      Statement computed(db_,
                         "SELECT m.name FROM sqlite_master m, pragma_table_xinfo(m.name) c WHERE m.type = 'table' "
                         "AND (m.name = 'pyebpf_runs' OR m.name LIKE 'ebpf\\_%' ESCAPE '\\') AND c.hidden != 0");
      if (computed.step())
        throw Error("table " + computed.text(0) + " has computed columns, which pyebpf never writes");
    } catch (const Error& e) {
      // A constructor that throws gets no destructor call: close the file here.
      sqlite3_close(db_);
      db_ = nullptr;
      if (std::string(e.what()).find("no pyebpf run") != std::string::npos) throw;
      throw Error(path + " is not a SQLite file pyebpf can read: " + e.what());
    }
    return;
  }
  try {
    // WAL: readers (sqlite3, `pyebpf report`) see committed batches while
    // pyebpf writes; NORMAL sync is durable across application crashes.
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = NORMAL");
    exec("PRAGMA user_version = 1");
    exec(
        "CREATE TABLE IF NOT EXISTS pyebpf_runs (run_id INTEGER PRIMARY KEY, env TEXT, host TEXT, version TEXT, "
        "command_line TEXT, pids JSON, started TEXT, started_us INTEGER, ended TEXT, ended_us INTEGER, "
        "duration_s REAL, stop_reason TEXT, summary JSON)");
  } catch (const Error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("cannot use SQLite file " + path + ": " + e.what());
  }
}

SqliteStore::~SqliteStore() {
  for (auto& [metric, t] : tables_) sqlite3_finalize(t.insert);
  if (db_) sqlite3_close(db_);
}

void SqliteStore::fail(const std::string& what) const {
  throw Error("SQLite " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

void SqliteStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw Error("SQLite " + path_ + ": " + msg);
  }
}

void SqliteStore::begin() {
  exec("BEGIN IMMEDIATE");
}
void SqliteStore::commit() {
  exec("COMMIT");
}
void SqliteStore::rollback() noexcept {
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

long SqliteStore::begin_run(const RunInfo& info) {
  Statement s(db_,
              "INSERT INTO pyebpf_runs (env, host, version, command_line, pids, started, started_us) "
              "VALUES (?, ?, ?, ?, ?, ?, ?)");
  bind_copy(s.get(), 1, info.env);
  bind_copy(s.get(), 2, info.host);
  bind_copy(s.get(), 3, info.version);
  bind_copy(s.get(), 4, info.command_line);
  bind_copy(s.get(), 5, nlohmann::ordered_json(info.pids).dump());
  bind_copy(s.get(), 6, iso8601_utc(info.started_us));
  sqlite3_bind_int64(s.get(), 7, info.started_us);
  s.step();
  return static_cast<long>(sqlite3_last_insert_rowid(db_));
}

void SqliteStore::end_run(long run_id, const RunEnd& end) {
  Statement s(db_,
              "UPDATE pyebpf_runs SET ended = ?, ended_us = ?, duration_s = ?, stop_reason = ?, summary = ? "
              "WHERE run_id = ?");
  bind_copy(s.get(), 1, iso8601_utc(end.ended_us));
  sqlite3_bind_int64(s.get(), 2, end.ended_us);
  sqlite3_bind_double(s.get(), 3, end.duration_s);
  bind_copy(s.get(), 4, end.stop_reason);
  bind_copy(
      s.get(), 5,
      nlohmann::ordered_json(end.summary_lines).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  sqlite3_bind_int64(s.get(), 6, run_id);
  s.step();
}

SqliteStore::Table& SqliteStore::table_for(const TableSchema& schema) {
  auto it = tables_.find(&schema);
  if (it != tables_.end()) return it->second;
  std::string sql = "CREATE TABLE IF NOT EXISTS " + quote(schema.table()) + " (run_id INTEGER NOT NULL, metric TEXT";
  for (const auto& c : schema.columns()) sql += ", " + quote(c.name) + " " + sql_type(c.type);
  exec(sql + ")");
  Table t;
  t.name = schema.table();
  {
    // The table may predate this pyebpf: take its columns as they are.
    Statement info(db_, "PRAGMA table_info(" + quote(t.name) + ")");
    while (info.step()) {
      std::string name = info.text(1);
      if (name == "run_id") continue;
      t.index.emplace(lower(name), static_cast<int>(t.columns.size()));
      t.columns.push_back(name);
    }
  }
  for (const auto& c : schema.columns()) {
    if (!t.index.count(lower(c.name))) add_column(t, c.name, sql_type(c.type));
    t.slot_of_field.push_back(t.index.at(lower(c.name)));
  }
  if (!t.index.count("metric")) add_column(t, "metric", "TEXT");
  t.metric_slot = t.index.at("metric");
  prepare_insert(t);
  return tables_.emplace(&schema, std::move(t)).first->second;
}

void SqliteStore::add_column(Table& t, const std::string& name, const std::string& type) {
  exec("ALTER TABLE " + quote(t.name) + " ADD COLUMN " + quote(name) + " " + type);
  t.index.emplace(lower(name), static_cast<int>(t.columns.size()));
  t.columns.push_back(name);
}

void SqliteStore::prepare_insert(Table& t) {
  sqlite3_finalize(t.insert);
  t.insert = nullptr;
  std::string sql = "INSERT INTO " + quote(t.name) + " (run_id";
  std::string values = "?";
  for (const auto& c : t.columns) {
    sql += ", " + quote(c);
    values += ", ?";
  }
  sql += ") VALUES (" + values + ")";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &t.insert, nullptr) != SQLITE_OK) fail("prepare insert");
}

void SqliteStore::bind_field(sqlite3_stmt* s, int i, const Record& r, FieldId f) {
  using K = Record::Kind;
  scratch_.clear();
  switch (r.kind(f)) {
    case K::Absent:
    case K::Null:
      break;  // NULL: the event had no such field
    case K::UInt:
      if (r.uint_value(f) <= static_cast<std::uint64_t>(std::numeric_limits<sqlite3_int64>::max()))
        sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(r.uint_value(f)));
      else
        sqlite3_bind_double(s, i, static_cast<double>(r.uint_value(f)));
      break;
    case K::Int:
    case K::Time:
      if (r.kind(f) == K::Time) {
        append_iso8601_utc(scratch_, r.time_us(f));
        bind_copy(s, i, scratch_);
      } else {
        sqlite3_bind_int64(s, i, r.int_value(f));
      }
      break;
    case K::Float:
      sqlite3_bind_double(s, i, r.float_value(f));
      break;
    case K::Bool:
      sqlite3_bind_int(s, i, r.bool_value(f) ? 1 : 0);
      break;
    case K::Text:
      bind_view(s, i, r.text(f));
      break;
    case K::PyStack:
      for (std::size_t k = 0; k < r.size(f); ++k) {
        if (k) scratch_ += ';';
        stack::append_text(scratch_, r.py_frame(f, k));
      }
      bind_copy(s, i, scratch_);
      break;
    case K::Texts:
    case K::NativeStack:
    case K::Json:
      // JSON text, as the reader parses it back (declared type JSON).
      json_.append_value(scratch_, r, f);
      bind_copy(s, i, scratch_);
      break;
  }
}

void SqliteStore::insert(long run_id, const Record& r) {
  Table& t = table_for(r.schema());
  sqlite3_stmt* s = t.insert;
  sqlite3_bind_int64(s, 1, run_id);
  bind_view(s, t.metric_slot + 2, r.metric());
  for (FieldId f = 0; f < t.slot_of_field.size(); ++f) bind_field(s, t.slot_of_field[f] + 2, r, f);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE) fail("insert into " + t.name);
}

std::vector<SqliteStore::StoredRun> SqliteStore::runs() {
  std::vector<StoredRun> out;
  Statement s(db_,
              "SELECT run_id, env, host, version, command_line, pids, started_us, ended_us, duration_s, "
              "stop_reason, summary FROM pyebpf_runs ORDER BY run_id");
  while (s.step()) {
    StoredRun r;
    r.run_id = static_cast<long>(sqlite3_column_int64(s.get(), 0));
    r.info.env = s.text(1);
    r.info.host = s.text(2);
    r.info.version = s.text(3);
    r.info.command_line = s.text(4);
    auto pids = nlohmann::json::parse(s.text(5), nullptr, false);
    if (pids.is_array()) {
      for (const auto& p : pids) {
        if (p.is_number_integer()) r.info.pids.push_back(p.get<long>());
      }
    }
    r.info.started_us = sqlite3_column_int64(s.get(), 6);
    r.ended = sqlite3_column_type(s.get(), 7) != SQLITE_NULL;
    r.end.ended_us = sqlite3_column_int64(s.get(), 7);
    r.end.duration_s = sqlite3_column_double(s.get(), 8);
    r.end.stop_reason = s.text(9);
    auto lines = nlohmann::json::parse(s.text(10), nullptr, false);
    if (lines.is_array()) {
      for (const auto& l : lines) {
        if (l.is_string()) r.end.summary_lines.push_back(l.get<std::string>());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

void SqliteStore::for_each_event(long run_id, const std::function<void(const nlohmann::ordered_json&)>& fn) {
  using Event = nlohmann::ordered_json;
  std::vector<std::string> tables;
  {
    Statement s(db_,
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ebpf\\_%' ESCAPE '\\' "
                "ORDER BY name");
    while (s.step()) tables.push_back(s.text(0));
  }
  for (const auto& table : tables) {
    Statement s(db_, "SELECT * FROM " + quote(table) + " WHERE run_id = ? ORDER BY rowid");
    sqlite3_bind_int64(s.get(), 1, run_id);
    int n = sqlite3_column_count(s.get());
    std::vector<std::string> names, types;
    for (int i = 0; i < n; ++i) {
      names.emplace_back(sqlite3_column_name(s.get(), i));
      const char* decl = sqlite3_column_decltype(s.get(), i);
      types.emplace_back(decl ? decl : "");
    }
    while (s.step()) {
      Event e = Event::object();
      for (int i = 0; i < n; ++i) {
        if (names[i] == "run_id") continue;
        switch (sqlite3_column_type(s.get(), i)) {
          case SQLITE_INTEGER: {
            auto v = sqlite3_column_int64(s.get(), i);
            if (types[i] == "BOOLEAN")
              e[names[i]] = v != 0;
            else
              e[names[i]] = v;
            break;
          }
          case SQLITE_FLOAT:
            e[names[i]] = sqlite3_column_double(s.get(), i);
            break;
          case SQLITE_TEXT: {
            std::string text = s.text(i);
            if (types[i] == "JSON") {
              auto parsed = Event::parse(text, nullptr, false);
              if (!parsed.is_discarded()) {
                e[names[i]] = std::move(parsed);
                break;
              }
            }
            e[names[i]] = std::move(text);
            break;
          }
          default:
            break;  // NULL: the event had no such field
        }
      }
      fn(e);
    }
  }
}

}  // namespace pyebpf::sinks
