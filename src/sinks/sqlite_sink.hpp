// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "sinks/async_sink.hpp"
#include "sinks/run_info.hpp"
#include "sinks/sqlite_store.hpp"

namespace pyebpf::sinks {

// Events into one SQLite file (see SqliteStore), from a writer thread, in
// transactions of up to kBatch events or kCommitInterval, whichever first: a
// reader sees the data at most a second late, and an hour of profiling costs
// a few thousand commits, not one per event.
class SqliteSink : public AsyncSink {
 public:
  static constexpr std::size_t kBatch = 5000;
  static constexpr std::chrono::milliseconds kCommitInterval{1000};

  // Opens (creates) the file and records the run; throws pyebpf::Error.
  SqliteSink(const std::string& path, const RunInfo& run, std::size_t queue_max);
  ~SqliteSink() override;

  // After close: records how the run ended (the summary lines, with this
  // sink's own) so `pyebpf report` can print them.
  void record_end(const RunEnd& end);
  std::string summary() const override;
  long run_id() const { return run_id_; }

 private:
  SteadyClock::time_point on_writer(std::vector<Record>& incoming, bool closing,
                                    SteadyClock::time_point deadline) override;
  bool commit_pending();

  std::unique_ptr<SqliteStore> store_;
  long run_id_ = 0;
  std::vector<Record> pending_;
  SteadyClock::time_point last_commit_{};
  SteadyClock::time_point retry_at_{};
  std::atomic<std::uint64_t> commits_{0}, failures_{0};
};

}  // namespace pyebpf::sinks
