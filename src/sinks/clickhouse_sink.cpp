// SPDX-License-Identifier: Apache-2.0
#include "sinks/clickhouse_sink.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "pyebpf/error.hpp"
#include "util/gzip.hpp"

namespace pyebpf::sinks {
namespace {

using namespace std::chrono_literals;
using clickhouse::Failure;

constexpr auto kRequestTimeout = 10s;
constexpr auto kMaxBackoff = 30s;

// First line of a server message, short enough for a log line.
std::string brief(std::string_view text, std::size_t max = 300) {
  auto nl = text.find('\n');
  std::string out(text.substr(0, std::min(nl, max)));
  if (out.size() < text.size() && nl != out.size()) out += "...";
  return out;
}

std::string describe(const HttpResponse& r) {
  if (r.status == 0) return r.error;
  return fmt::format("HTTP {}: {}", r.status, brief(r.body));
}

bool is_auth_failure(const HttpResponse& r) {
  int code = clickhouse::exception_code(r.body);
  return r.status == 401 || r.status == 403 || code == 192 || code == 193 || code == 194 || code == 516;
}

std::chrono::milliseconds remaining(SteadyClock::time_point deadline, std::chrono::milliseconds cap) {
  if (deadline == SteadyClock::time_point::max()) return cap;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return std::clamp(left, 1ms, cap);
}

}  // namespace

ClickHouseSink::ClickHouseSink(ClickHouseOptions options, std::string host, std::vector<const TableSchema*> schemas)
    : AsyncSink("clickhouse", options.queue_max),
      options_(std::move(options)),
      host_(std::move(host)),
      base_url_([&] {
        std::string u = options_.url;
        while (!u.empty() && u.back() == '/') u.pop_back();
        return u + "/?";
      }()),
      schemas_(std::move(schemas)) {
  http_.set_credentials(options_.user, options_.password);
  http_.set_abort([this] { return SteadyClock::now() >= close_deadline(); });
  const std::string where = redact_url(options_.url);
  if (auto failure = connect(5s)) {
    if (failure->status == 0) {
      spdlog::warn("clickhouse: no answer from {} ({}); events are kept (up to {}) and sent once it answers", where,
                   failure->error, options_.queue_max);
      retry_at_ = SteadyClock::now() + 1s;
      backoff_ = 1s;
      failing_since_ = SteadyClock::now();
    } else if (is_auth_failure(*failure)) {
      throw Error(fmt::format("ClickHouse at {} refused user '{}': {}", where, options_.user, describe(*failure)),
                  "check --clickhouse-user and the password (--clickhouse-password or PYEBPF_CLICKHOUSE_PASSWORD)");
    } else if (clickhouse::exception_code(failure->body) == 81) {
      throw Error(fmt::format("ClickHouse at {} has no database '{}'", where, options_.database),
                  fmt::format("create it (CREATE DATABASE {}) or choose another with --clickhouse-database",
                              clickhouse::quote_ident(options_.database)));
    } else {
      throw Error(fmt::format("ClickHouse at {} (database '{}', user '{}') failed: {}", where, options_.database,
                              options_.user, describe(*failure)),
                  "the user needs the right to create and insert into the ebpf_* tables");
    }
  } else {
    spdlog::info("clickhouse: server {} at {}, database {}: tables ready ({})", server_version_, where,
                 options_.database, dialect_->describe());
  }
  start();
}

ClickHouseSink::~ClickHouseSink() {
  stop();
}

HttpResponse ClickHouseSink::query(const std::string& sql, std::string_view body, bool gzip,
                                   std::chrono::milliseconds timeout) {
  // Unknown fields are skipped rather than failing the insert: rows only carry
  // them if a column could not be added to an existing table.
  std::string url = base_url_ + "query=" + HttpClient::escape(sql) + "&input_format_skip_unknown_fields=1";
  std::vector<std::pair<std::string, std::string>> headers;
  if (gzip) {
    std::string packed = gzip_compress(body, 1);  // level 1: ~8x smaller already, at a fraction of the CPU
    headers = {{"Content-Encoding", "gzip"}, {"Content-Type", "application/x-ndjson"}};
    bytes_sent_ += packed.size();
    return http_.post(url, packed, headers, timeout);
  }
  return http_.post(url, body, headers, timeout);
}

std::optional<HttpResponse> ClickHouseSink::connect(std::chrono::milliseconds timeout) {
  HttpResponse r = query("SELECT version()", {}, false, timeout);
  if (!r.ok()) return r;
  auto version = clickhouse::ServerVersion::parse(r.body);
  if (!version) {
    r.status = 500;
    r.body = "unexpected answer to SELECT version(): " + brief(r.body, 80);
    return r;
  }
  server_version_ = version->text;
  dialect_ = clickhouse::Dialect::for_version(*version);
  for (const TableSchema* schema : schemas_) {
    if (auto failure = ensure_table(table_for(*schema), timeout)) return failure;
  }
  // Events that arrived before the version was known can now be encoded.
  std::vector<Record> pending;
  pending.swap(unencoded_);
  for (const auto& r : pending) route(r);
  return std::nullopt;
}

ClickHouseSink::Table& ClickHouseSink::table_for(const TableSchema& schema) {
  auto it = tables_.find(&schema);
  if (it == tables_.end()) {
    it = tables_.emplace(&schema, Table{}).first;
    it->second.schema = &schema;
  }
  Table& t = it->second;
  if (!t.encoder && dialect_) t.encoder.emplace(*t.schema, *dialect_, host_);
  return t;
}

std::optional<HttpResponse> ClickHouseSink::ensure_table(Table& t, std::chrono::milliseconds timeout) {
  const auto& db = options_.database;
  HttpResponse r = query(clickhouse::create_table_sql(*t.schema, db, *dialect_), {}, false, timeout);
  if (!r.ok()) return r;
  // A table made by an older pyebpf may lack newer columns.
  r = query(fmt::format("SELECT name FROM system.columns WHERE database = '{}' AND table = '{}' FORMAT TabSeparated",
                        db, t.schema->table()),
            {}, false, timeout);
  if (!r.ok()) return r;
  std::vector<std::string> have;
  std::size_t pos = 0;
  while (pos < r.body.size()) {
    auto nl = r.body.find('\n', pos);
    have.push_back(r.body.substr(pos, nl - pos));
    pos = nl == std::string::npos ? r.body.size() : nl + 1;
  }
  for (const auto& [name, type] : clickhouse::table_columns(*t.schema, *dialect_)) {
    if (std::find(have.begin(), have.end(), name) != have.end()) continue;
    r = query(clickhouse::add_column_sql(db, t.schema->table(), name, type), {}, false, timeout);
    if (!r.ok()) return r;
    spdlog::info("clickhouse: added column {} {} to {}", name, type, t.schema->table());
  }
  t.ready = true;
  return std::nullopt;
}

void ClickHouseSink::route(const Record& record) {
  if (!dialect_) {
    unencoded_.push_back(record);
    return;
  }
  Table& t = table_for(record.schema());
  if (t.rows.empty()) t.oldest = SteadyClock::now();
  t.rows.push_back(t.encoder->encode(record));
}

void ClickHouseSink::back_off(const std::string& what, const HttpResponse& response) {
  ++retries_;
  auto now = SteadyClock::now();
  if (backoff_ == 0ms) {
    failing_since_ = now;
    spdlog::warn("clickhouse: {} failed ({}); keeping the rows and retrying with backoff", what, describe(response));
  }
  backoff_ = backoff_ == 0ms ? 500ms : std::min<std::chrono::milliseconds>(backoff_ * 2, kMaxBackoff);
  retry_at_ = now + backoff_;
}

ClickHouseSink::Outcome ClickHouseSink::send_front(Table& t, std::size_t count, std::chrono::milliseconds timeout) {
  std::string body;
  for (std::size_t i = 0; i < count; ++i) {
    body += t.rows[i];
    body += '\n';
  }
  HttpResponse r = query(clickhouse::insert_sql(options_.database, t.schema->table()), body, true, timeout);
  if (r.ok()) {
    t.rows.erase(t.rows.begin(), t.rows.begin() + static_cast<std::ptrdiff_t>(count));
    ++inserts_;
    delivered(count);
    t.unknown_failures = 0;
    if (backoff_ > 0ms) {
      spdlog::info("clickhouse: inserts work again after {:.1f} s",
                   std::chrono::duration<double>(SteadyClock::now() - failing_since_).count());
      backoff_ = 0ms;
    }
    return Outcome::Done;
  }
  Failure f = clickhouse::classify(r.status, r.body);
  if (f == Failure::MissingTable) t.ready = false;
  if (f == Failure::MissingTable || f == Failure::Transient) {
    back_off("insert into " + t.schema->table(), r);
    return Outcome::Retry;
  }
  if (f == Failure::Unknown && ++t.unknown_failures < 3) {
    back_off("insert into " + t.schema->table(), r);
    return Outcome::Retry;
  }
  // The rows are at fault: halve until the bad ones are alone.
  if (count == 1) {
    auto now = SteadyClock::now();
    if (data_error_logs_ < 5 || now - last_data_error_log_ > 60s) {
      ++data_error_logs_;
      last_data_error_log_ = now;
      spdlog::warn("clickhouse: {} rejected a row: {}; row: {}", t.schema->table(), describe(r), brief(t.rows.front()));
    }
    t.rows.pop_front();
    rejected(1);
    return Outcome::Done;
  }
  std::size_t half = count / 2;
  if (send_front(t, half, timeout) == Outcome::Retry) return Outcome::Retry;
  return send_front(t, count - half, timeout);
}

SteadyClock::time_point ClickHouseSink::on_writer(std::vector<Record>& incoming, bool closing,
                                                  SteadyClock::time_point deadline) {
  for (const auto& r : incoming) route(r);
  auto now = SteadyClock::now();
  if (now < retry_at_) return retry_at_;
  if (!dialect_) {
    if (auto failure = connect(remaining(deadline, kRequestTimeout))) {
      back_off("connecting to " + redact_url(options_.url), *failure);
      return retry_at_;
    }
    spdlog::info("clickhouse: server {} answers; tables ready ({})", server_version_, dialect_->describe());
  }
  const auto interval =
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(options_.flush_interval_s));
  auto next = SteadyClock::time_point::max();
  for (auto& [schema, t] : tables_) {
    if (t.rows.empty()) continue;
    bool timer = now - t.oldest >= interval;
    if (!closing && !timer && t.rows.size() < options_.batch_size) {
      next = std::min(next, t.oldest + interval);
      continue;
    }
    if (!t.ready) {
      if (auto failure = ensure_table(t, remaining(deadline, kRequestTimeout))) {
        back_off("creating " + t.schema->table(), *failure);
        return retry_at_;
      }
    }
    // Full batches always; the remainder too when its time has come.
    while (!t.rows.empty() && (closing || timer || t.rows.size() >= options_.batch_size)) {
      std::size_t n = std::min(t.rows.size(), options_.batch_size);
      if (send_front(t, n, remaining(deadline, kRequestTimeout)) == Outcome::Retry) return retry_at_;
      if (closing && SteadyClock::now() >= deadline) return deadline;
    }
    if (!t.rows.empty()) {
      t.oldest = SteadyClock::now();
      next = std::min(next, t.oldest + interval);
    }
  }
  return next;
}

std::string ClickHouseSink::summary() const {
  Counts c = counts();
  return fmt::format(
      "clickhouse: {} rows inserted into {}.ebpf_* at {} (server {}) in {} inserts, {} KiB gzipped; {} rejected as bad "
      "data, {} dropped (queue full at {}), {} not delivered at exit, {} retries",
      c.delivered, options_.database, redact_url(options_.url),
      server_version_.empty() ? "never reached" : server_version_, inserts_.load(), bytes_sent_.load() / 1024,
      c.rejected, c.dropped_full, options_.queue_max, c.dropped_at_exit, retries_.load());
}

}  // namespace pyebpf::sinks
