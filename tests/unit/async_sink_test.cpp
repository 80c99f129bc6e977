// SPDX-License-Identifier: Apache-2.0
// AsyncSink: the runner's thread never waits for the backend; a full queue
// drops and counts; closing delivers what is held until the deadline, counts
// the rest, and a second signal can cut it short.
#include "sinks/async_sink.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "trackers/py_stack/py_stack_events.hpp"

namespace pyebpf::sinks {
namespace {

using namespace std::chrono_literals;

// A backend that stores what it is given, and can be held up (a database
// that does not answer) until released.
// What a backend stored, kept apart so that it outlives the backend.
struct Stored {
  std::mutex mutex;
  std::vector<std::uint64_t> tids;
};

class HeldBackend : public AsyncSink {
 public:
  explicit HeldBackend(std::size_t capacity, std::shared_ptr<Stored> stored = std::make_shared<Stored>())
      : AsyncSink("test", capacity), stored_(std::move(stored)) {
    start();
  }
  ~HeldBackend() override { stop(); }

  void hold(bool held) {
    {
      std::lock_guard lock(mutex_);
      held_ = held;
    }
    cv_.notify_all();
  }
  std::vector<std::uint64_t> stored() {
    std::lock_guard lock(stored_->mutex);
    return stored_->tids;
  }
  // Events the writer has taken and not stored yet (held up).
  std::size_t in_flight() {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }

 private:
  SteadyClock::time_point on_writer(std::vector<Record>& incoming, bool, SteadyClock::time_point) override {
    std::unique_lock lock(mutex_);
    for (auto& r : incoming) pending_.push_back(r.uint_value(thread_fields::tid));
    // Held: wait until released, or until the close deadline as it stands
    // now (a request in flight gives up when a second signal moves it).
    while (held_ && SteadyClock::now() < close_deadline()) cv_.wait_for(lock, 10ms);
    if (held_) return SteadyClock::now() + 10ms;
    {
      std::lock_guard stored_lock(stored_->mutex);
      stored_->tids.insert(stored_->tids.end(), pending_.begin(), pending_.end());
    }
    std::size_t n = pending_.size();
    pending_.clear();
    lock.unlock();
    delivered(n);
    return SteadyClock::time_point::max();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool held_ = false;
  std::vector<std::uint64_t> pending_;
  std::shared_ptr<Stored> stored_;
};

Record event(std::uint64_t tid) {
  Record r(trackers::py_stack_schema());
  r.set_uint(thread_fields::tid, tid);
  return r;
}

TEST(AsyncSink, DeliversInOrderAndClosesWhenEverythingIsStored) {
  HeldBackend sink(100);
  for (std::uint64_t i = 0; i < 50; ++i) sink.write(event(i));
  sink.flush();
  sink.begin_close(SteadyClock::now() + 5s);
  ASSERT_TRUE(sink.wait_closed(SteadyClock::now() + 5s));
  std::vector<std::uint64_t> expected(50);
  for (std::uint64_t i = 0; i < 50; ++i) expected[i] = i;
  EXPECT_EQ(sink.stored(), expected);
  auto c = sink.counts();
  EXPECT_EQ(c.received, 50u);
  EXPECT_EQ(c.delivered, 50u);
  EXPECT_EQ(c.dropped_full + c.dropped_at_exit, 0u);
}

TEST(AsyncSink, AFullQueueDropsNewEventsWithoutWaiting) {
  HeldBackend sink(10);
  sink.hold(true);
  auto start = SteadyClock::now();
  for (std::uint64_t i = 0; i < 25; ++i) {
    sink.write(event(i));
    sink.flush();
  }
  EXPECT_LT(SteadyClock::now() - start, 1s) << "the caller never waits for the backend";
  auto c = sink.counts();
  EXPECT_EQ(c.received, 25u);
  EXPECT_EQ(c.dropped_full, 15u);  // 10 held, the rest dropped
  sink.hold(false);
  sink.begin_close(SteadyClock::now() + 5s);
  ASSERT_TRUE(sink.wait_closed(SteadyClock::now() + 5s));
  EXPECT_EQ(sink.counts().delivered, 10u);
  EXPECT_EQ(sink.stored().size(), 10u);
}

TEST(AsyncSink, WhatTheDeadlineLeavesIsCountedAsNotDelivered) {
  HeldBackend sink(100);
  sink.hold(true);
  for (std::uint64_t i = 0; i < 5; ++i) sink.write(event(i));
  sink.flush();
  sink.begin_close(SteadyClock::now() + 200ms);
  EXPECT_FALSE(sink.wait_closed(SteadyClock::now() + 50ms)) << "still within the deadline";
  ASSERT_TRUE(sink.wait_closed(SteadyClock::now() + 5s));
  auto c = sink.counts();
  EXPECT_EQ(c.delivered, 0u);
  EXPECT_EQ(c.dropped_at_exit, 5u);
  // Written after close: nothing would deliver it.
  sink.write(event(9));
  sink.flush();
  EXPECT_EQ(sink.counts().dropped_at_exit, 6u);
}

TEST(AsyncSink, ASecondCloseMovesTheDeadlineEarlier) {
  HeldBackend sink(100);
  sink.hold(true);
  sink.write(event(1));
  sink.flush();
  sink.begin_close(SteadyClock::now() + 60s);
  EXPECT_FALSE(sink.wait_closed(SteadyClock::now() + 100ms));
  auto start = SteadyClock::now();
  sink.begin_close(SteadyClock::now());  // a second Ctrl-C
  ASSERT_TRUE(sink.wait_closed(SteadyClock::now() + 5s));
  EXPECT_LT(SteadyClock::now() - start, 3s);
  EXPECT_EQ(sink.counts().dropped_at_exit, 1u);
}

// Destruction without a close (an error path) lets the write in flight
// finish and delivers nothing more: event 2, queued behind it, is not stored.
TEST(AsyncSink, DestroyingStopsTheWriterWithoutDelivering) {
  auto stored = std::make_shared<Stored>();
  auto sink = std::make_unique<HeldBackend>(100, stored);
  sink->hold(true);
  sink->write(event(1));
  sink->flush();
  for (auto until = SteadyClock::now() + 5s; sink->in_flight() == 0 && SteadyClock::now() < until;)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(sink->in_flight(), 1u);
  sink->write(event(2));
  sink->flush();
  // Released only once the destructor has asked the writer to stop (it
  // joins the writer, which is held until then).
  HeldBackend* backend = sink.get();
  std::thread releaser([backend] {
    std::this_thread::sleep_for(100ms);
    backend->hold(false);
  });
  sink.reset();
  releaser.join();
  EXPECT_EQ(stored->tids, std::vector<std::uint64_t>{1});
}

}  // namespace
}  // namespace pyebpf::sinks
