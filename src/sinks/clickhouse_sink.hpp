// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "sinks/async_sink.hpp"
#include "sinks/clickhouse_format.hpp"
#include "util/http.hpp"

namespace pyebpf::sinks {

struct ClickHouseOptions {
  std::string url;  // http://host:8123
  std::string user = "default";
  std::string password;
  std::string database = "default";
  std::size_t batch_size = 5000;
  double flush_interval_s = 30;
  std::size_t queue_max = 100000;
};

// Events into one ClickHouse table per metric over HTTP (libcurl), as gzipped
// `INSERT ... FORMAT JSONEachRow`, from a writer thread.
//
// - Tables are created if missing, with types for the server's version, and
//   columns a newer pyebpf added are added to older tables (ALTER ADD COLUMN).
// - A table's rows are sent when --ch-batch-size of them are waiting or the
//   oldest has waited --ch-flush-interval: few, large inserts.
// - Transient failures (no answer, overload, auth, read-only) keep the rows
//   and retry with exponential backoff (0.5 s doubling to 30 s); rows keep
//   arriving into the bounded queue meanwhile.
// - Data errors bisect the batch down to the bad rows, which alone are
//   dropped (counted, logged with the server's message); the good rows land.
class ClickHouseSink : public AsyncSink {
 public:
  // Asks the server for its version and creates the tables now (5 s budget).
  // Throws pyebpf::Error when the server answers but refuses (credentials,
  // missing database, no right to create tables); when it does not answer,
  // warns and keeps trying from the writer thread.
  ClickHouseSink(ClickHouseOptions options, std::string host, std::vector<const TableSchema*> schemas);
  ~ClickHouseSink() override;

  std::string summary() const override;

 private:
  struct Table {
    const TableSchema* schema = nullptr;
    std::optional<clickhouse::RowEncoder> encoder;
    std::deque<std::string> rows;
    SteadyClock::time_point oldest{};
    bool ready = false;  // exists with every column
    int unknown_failures = 0;
  };
  enum class Outcome { Done, Retry };

  SteadyClock::time_point on_writer(std::vector<Record>& incoming, bool closing,
                                    SteadyClock::time_point deadline) override;
  HttpResponse query(const std::string& sql, std::string_view body, bool gzip, std::chrono::milliseconds timeout);
  // Version + tables. Returns the failing response (status 0 = no answer) or nullopt.
  std::optional<HttpResponse> connect(std::chrono::milliseconds timeout);
  std::optional<HttpResponse> ensure_table(Table& table, std::chrono::milliseconds timeout);
  Table& table_for(const TableSchema& schema);
  void route(const Record& record);
  Outcome send_front(Table& table, std::size_t count, std::chrono::milliseconds timeout);
  void back_off(const std::string& what, const HttpResponse& response);

  const ClickHouseOptions options_;
  const std::string host_;
  const std::string base_url_;
  const std::vector<const TableSchema*> schemas_;  // tables created up front
  HttpClient http_;                                // writer thread (and the constructor, before the thread starts)

  std::optional<clickhouse::Dialect> dialect_;
  std::string server_version_;
  std::map<const TableSchema*, Table> tables_;
  std::vector<Record> unencoded_;  // before the server's version is known
  SteadyClock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  SteadyClock::time_point failing_since_{};
  int data_error_logs_ = 0;
  SteadyClock::time_point last_data_error_log_{};

  std::atomic<std::uint64_t> inserts_{0}, retries_{0}, bytes_sent_{0};
};

}  // namespace pyebpf::sinks
