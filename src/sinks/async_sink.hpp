// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// A sink whose slow work (a database) runs on its own writer thread, behind a
// bounded queue, so the thread reading BPF never waits for it.
//
// At most `capacity` events are held at any time: queued, or taken by the
// writer but not yet delivered (e.g. while the database is down). Beyond that
// new events are dropped and counted, never blocked on. At the end of the run
// the writer delivers what it holds until the deadline; what is left then is
// counted as not delivered.
class AsyncSink : public Sink {
 public:
  ~AsyncSink() override;

  void write(const Record& record) final;  // runner thread: stages a copy
  void flush() final;                      // runner thread: hands staged events to the writer
  void begin_close(SteadyClock::time_point deadline) final;
  bool wait_closed(SteadyClock::time_point until) final;

  struct Counts {
    std::uint64_t received = 0;         // events written to this sink
    std::uint64_t delivered = 0;        // stored by the backend
    std::uint64_t rejected = 0;         // refused by the backend as bad data (one by one)
    std::uint64_t dropped_full = 0;     // dropped because `capacity` events were held
    std::uint64_t dropped_at_exit = 0;  // still held when the close deadline came
  };
  Counts counts() const;
  const std::string& name() const { return name_; }

 protected:
  AsyncSink(std::string name, std::size_t capacity);

  // Starts the writer thread: the last statement of the derived constructor.
  void start();
  // Stops the writer thread without delivering more: the first statement of
  // the derived destructor (the thread calls into the derived class).
  void stop() noexcept;

  // Writer thread. Takes `incoming` (possibly empty) and delivers what is due;
  // when `closing`, delivers everything it can before `deadline`. Returns the
  // time it wants to be called again even if no event arrives (a flush
  // interval, a retry after backoff).
  virtual SteadyClock::time_point on_writer(std::vector<Record>& incoming, bool closing,
                                            SteadyClock::time_point deadline) = 0;
  // Writer thread: events left the sink, stored or refused as bad data.
  void delivered(std::size_t n);
  void rejected(std::size_t n);
  std::size_t held() const { return held_.load(std::memory_order_relaxed); }
  // Any thread: the close deadline as it stands now (max before close), so a
  // request in flight can give up when a second signal moves it earlier.
  SteadyClock::time_point close_deadline() const {
    return SteadyClock::time_point(SteadyClock::duration(deadline_rep_.load()));
  }

 private:
  void run();

  const std::string name_;
  const std::size_t capacity_;
  std::vector<Record> staged_;  // runner thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  std::vector<Record> queue_;
  bool poked_ = false;  // close requested or its deadline moved
  bool closing_ = false;
  bool stop_ = false;
  bool done_ = false;
  SteadyClock::time_point deadline_ = SteadyClock::time_point::max();
  std::thread thread_;

  std::atomic<SteadyClock::rep> deadline_rep_{SteadyClock::time_point::max().time_since_epoch().count()};
  std::atomic<std::size_t> held_{0};
  std::atomic<std::uint64_t> received_{0}, delivered_{0}, rejected_{0}, dropped_full_{0}, dropped_at_exit_{0};
  SteadyClock::time_point last_drop_warning_{};
};

}  // namespace pyebpf::sinks
