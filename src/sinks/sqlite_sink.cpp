// SPDX-License-Identifier: Apache-2.0
#include "sinks/sqlite_sink.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pyebpf/error.hpp"

namespace pyebpf::sinks {

SqliteSink::SqliteSink(const std::string& path, const RunInfo& run, std::size_t queue_max)
    : AsyncSink("sqlite", queue_max), store_(std::make_unique<SqliteStore>(path, SqliteStore::Mode::Write)) {
  run_id_ = store_->begin_run(run);
  last_commit_ = SteadyClock::now();
  spdlog::info("sqlite: writing run {} to {}", run_id_, path);
  start();
}

SqliteSink::~SqliteSink() {
  stop();
}

bool SqliteSink::commit_pending() {
  if (pending_.empty()) return true;
  try {
    store_->begin();
    std::size_t i = 0;
    try {
      for (; i < pending_.size(); ++i) store_->insert(run_id_, pending_[i]);
      store_->commit();
    } catch (...) {
      store_->rollback();
      throw;
    }
  } catch (const Error& e) {
    // Disk full, file locked by another writer...: keep the events, retry later.
    if (failures_++ == 0 || failures_ % 60 == 0)
      spdlog::warn("sqlite: cannot write {} events ({}); keeping them and retrying", pending_.size(), e.what());
    return false;
  }
  delivered(pending_.size());
  pending_.clear();
  ++commits_;
  return true;
}

SteadyClock::time_point SqliteSink::on_writer(std::vector<Record>& incoming, bool closing,
                                              SteadyClock::time_point /*deadline*/) {
  for (auto& e : incoming) pending_.push_back(std::move(e));
  auto now = SteadyClock::now();
  if (now < retry_at_) return retry_at_;
  if (closing || pending_.size() >= kBatch || now - last_commit_ >= kCommitInterval) {
    if (!commit_pending()) {
      retry_at_ = now + std::chrono::seconds(1);
      return retry_at_;
    }
    last_commit_ = now;
  }
  return last_commit_ + kCommitInterval;
}

void SqliteSink::record_end(const RunEnd& end) {
  try {
    store_->end_run(run_id_, end);
  } catch (const Error& e) {
    spdlog::warn("sqlite: cannot record the end of run {}: {}", run_id_, e.what());
  }
}

std::string SqliteSink::summary() const {
  Counts c = counts();
  return fmt::format(
      "sqlite: {} events written to {} (run {}) in {} transactions, {} dropped (queue full), {} not "
      "written at exit",
      c.delivered, store_->path(), run_id_, commits_.load(), c.dropped_full, c.dropped_at_exit);
}

}  // namespace pyebpf::sinks
