// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinks/json_writer.hpp"
#include "sinks/record.hpp"
#include "sinks/run_info.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace pyebpf::sinks {

// One SQLite file holding runs and their events: a table per metric (the
// ClickHouse names), one row per event with one column per field of the
// record's schema, plus `run_id` and `metric`. A table an older pyebpf made
// gets the columns it lacks. Declared types tell the reader how to give the
// JSON back: BOOLEAN -> true/false, JSON -> parsed, the rest by storage class.
class SqliteStore {
 public:
  enum class Mode { Write, Read };
  // Throws pyebpf::Error naming the file and SQLite's message.
  SqliteStore(const std::string& path, Mode mode);
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // --- writing (one thread at a time) ---
  long begin_run(const RunInfo& info);
  void end_run(long run_id, const RunEnd& end);
  void begin();
  void commit();
  void rollback() noexcept;
  void insert(long run_id, const Record& record);

  // --- reading ---
  struct StoredRun {
    long run_id = 0;
    RunInfo info;
    bool ended = false;
    RunEnd end;
  };
  std::vector<StoredRun> runs();
  // Every event of the run as a JSON object (the input boundary of `pyebpf
  // report`), table by table (tables in name order), rows in insertion order.
  void for_each_event(long run_id, const std::function<void(const nlohmann::ordered_json&)>& fn);

  const std::string& path() const { return path_; }

 private:
  struct Table {
    std::string name;
    std::vector<std::string> columns;  // after run_id
    std::unordered_map<std::string, int> index;
    std::vector<int> slot_of_field;  // schema field -> column
    int metric_slot = -1;
    sqlite3_stmt* insert = nullptr;
  };
  Table& table_for(const TableSchema& schema);
  void add_column(Table& table, const std::string& name, const std::string& type);
  void prepare_insert(Table& table);
  // Binds `field` to parameter `i` of the insert; an absent or null one stays NULL.
  void bind_field(sqlite3_stmt* insert, int i, const Record& record, FieldId field);
  void exec(const std::string& sql);
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<const TableSchema*, Table> tables_;
  std::string scratch_;  // bind_field(): a value's text
  JsonWriter json_;
};

}  // namespace pyebpf::sinks
