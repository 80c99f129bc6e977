// SPDX-License-Identifier: Apache-2.0
#include "sinks/async_sink.hpp"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace pyebpf::sinks {

AsyncSink::AsyncSink(std::string name, std::size_t capacity)
    : name_(std::move(name)), capacity_(std::max<std::size_t>(capacity, 1)) {}

AsyncSink::~AsyncSink() {
  stop();
}

void AsyncSink::start() {
  // The writer thread must never take SIGINT/SIGTERM: the runner reads them
  // from a signalfd, which only works if every thread blocks them. Threads
  // inherit the mask, so block everything around the creation.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void AsyncSink::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AsyncSink::write(const Record& record) {
  staged_.push_back(record);
  received_.fetch_add(1, std::memory_order_relaxed);
}

void AsyncSink::flush() {
  if (staged_.empty()) return;
  std::size_t held = held_.load();
  std::size_t room = held >= capacity_ ? 0 : capacity_ - held;
  std::size_t take = std::min(room, staged_.size());
  if (take < staged_.size()) {
    auto dropped = dropped_full_.fetch_add(staged_.size() - take) + (staged_.size() - take);
    auto now = SteadyClock::now();
    if (now - last_drop_warning_ > std::chrono::seconds(30)) {
      last_drop_warning_ = now;
      spdlog::warn("{}: {} events held (the queue limit), dropping new events; {} dropped so far", name_, held,
                   dropped);
    }
  }
  if (take > 0) {
    held_.fetch_add(take);
    std::lock_guard lock(mutex_);
    bool was_empty = queue_.empty();
    if (closing_) {
      dropped_at_exit_.fetch_add(take);  // written after close: nothing will deliver it
      held_.fetch_sub(take);
    } else {
      std::move(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(take), std::back_inserter(queue_));
      if (was_empty) wake_.notify_one();
    }
  }
  staged_.clear();
}

void AsyncSink::begin_close(SteadyClock::time_point deadline) {
  flush();
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    deadline_ = std::min(deadline_, deadline);
    deadline_rep_ = deadline_.time_since_epoch().count();
    poked_ = true;
  }
  wake_.notify_one();
}

bool AsyncSink::wait_closed(SteadyClock::time_point until) {
  std::unique_lock lock(mutex_);
  if (!done_cv_.wait_until(lock, until, [&] { return done_; })) return false;
  lock.unlock();
  if (thread_.joinable()) thread_.join();
  return true;
}

AsyncSink::Counts AsyncSink::counts() const {
  return {received_.load(), delivered_.load(), rejected_.load(), dropped_full_.load(), dropped_at_exit_.load()};
}

void AsyncSink::delivered(std::size_t n) {
  delivered_.fetch_add(n);
  held_.fetch_sub(n);
}

void AsyncSink::rejected(std::size_t n) {
  rejected_.fetch_add(n);
  held_.fetch_sub(n);
}

void AsyncSink::run() {
  std::vector<Record> incoming;
  auto next = SteadyClock::time_point::max();
  for (;;) {
    bool closing = false;
    auto deadline = SteadyClock::time_point::max();
    {
      std::unique_lock lock(mutex_);
      auto ready = [&] { return stop_ || poked_ || !queue_.empty(); };
      if (next == SteadyClock::time_point::max())
        wake_.wait(lock, ready);
      else
        wake_.wait_until(lock, next, ready);
      if (stop_) return;
      incoming.swap(queue_);
      poked_ = false;
      closing = closing_;
      deadline = deadline_;
    }
    try {
      next = on_writer(incoming, closing, deadline);
    } catch (const std::exception& e) {
      // A backend bug must not kill the process from a thread; what it held is
      // reported as not delivered.
      spdlog::error("{}: writer failed: {}", name_, e.what());
      next = SteadyClock::now() + std::chrono::seconds(1);
    }
    incoming.clear();
    if (closing && (held_.load() == 0 || SteadyClock::now() >= deadline)) {
      std::lock_guard lock(mutex_);
      dropped_at_exit_.fetch_add(held_.exchange(0));
      done_ = true;
      done_cv_.notify_all();
      return;
    }
    if (closing) next = std::min(next, deadline);
  }
}

}  // namespace pyebpf::sinks
