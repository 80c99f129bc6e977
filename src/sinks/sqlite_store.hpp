// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sinks/run_info.hpp"
#include "sinks/sink.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace pyebpf::sinks {

// One SQLite file holding runs and their events: a table per metric (the
// ClickHouse names), one row per event with one column per field, plus
// `run_id`. Columns come from the schema (sinks/schema.hpp) and are added on
// the fly for fields it does not know, typed by their first value, so any
// tracker's events land whole. Declared types tell the reader how to give the
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
  void insert(long run_id, const Event& event);

  // --- reading ---
  struct StoredRun {
    long run_id = 0;
    RunInfo info;
    bool ended = false;
    RunEnd end;
  };
  std::vector<StoredRun> runs();
  // Every event of the run, table by table (tables in name order), rows in
  // insertion order.
  void for_each_event(long run_id, const std::function<void(const Event&)>& fn);

  const std::string& path() const { return path_; }

 private:
  struct Table {
    std::string name;
    std::vector<std::string> columns;  // after run_id
    std::unordered_map<std::string, int> index;
    sqlite3_stmt* insert = nullptr;
  };
  Table& table_for_metric(const std::string& metric);
  void add_column(Table& table, const std::string& name, const std::string& type);
  void prepare_insert(Table& table);
  void exec(const std::string& sql);
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, Table> tables_;  // by metric
  std::vector<int> slots_;               // insert(): column of each field
};

}  // namespace pyebpf::sinks
