// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/detach.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>

namespace pyebpf::bpf {
namespace {

constexpr auto kQuiet = std::chrono::seconds(1);
// A perf-event link holds two descriptors (the link's and its perf event's).
constexpr std::size_t kMaxDeferred = 512;
constexpr std::size_t kBatch = 32;

class Detacher {
 public:
  ~Detacher() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  void add(std::vector<Link> links) {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    for (auto& link : links) queue_.push_back(std::move(link));
    wake_.notify_one();
  }

  void pause() {
    std::lock_guard lock(mutex_);
    ++pauses_;
  }

  void resume() {
    {
      std::lock_guard lock(mutex_);
      --pauses_;
      quiet_from_ = std::chrono::steady_clock::now() + kQuiet;
    }
    wake_.notify_one();
  }

 private:
  // Detaches in batches, outside the lock.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || (!queue_.empty() && pauses_ == 0); });
      if (queue_.empty()) return;  // stopping, and nothing left to detach
      if (!stopping_ && queue_.size() <= kMaxDeferred && std::chrono::steady_clock::now() < quiet_from_) {
        wake_.wait_until(lock, quiet_from_);
        continue;
      }
      const std::size_t n = std::min(queue_.size(), kBatch);
      std::vector<Link> batch(std::make_move_iterator(queue_.end() - static_cast<std::ptrdiff_t>(n)),
                              std::make_move_iterator(queue_.end()));
      queue_.resize(queue_.size() - n);
      lock.unlock();
      detach_together(std::move(batch));
      lock.lock();
    }
  }

  // A uprobe_multi link's detach mostly waits for RCU grace periods, which
  // detaches in flight at once share: nine links closed together take about
  // as long as one (~50 ms here). Perf-event uprobes detach one at a time in
  // the kernel whatever pyebpf does, so there a batch is just a queue.
  static void detach_together(std::vector<Link> batch) {
    std::vector<std::jthread> closers;
    closers.reserve(batch.size());
    for (auto& link : batch) closers.emplace_back([l = std::move(link)]() mutable { l.reset(); });
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Link> queue_;
  int pauses_ = 0;
  std::chrono::steady_clock::time_point quiet_from_;
  bool stopping_ = false;
  std::thread thread_;
};

Detacher& detacher() {
  static Detacher d;
  return d;
}

}  // namespace

void detach_later(std::map<pid_t, std::vector<Link>>& links, pid_t pid) {
  auto it = links.find(pid);
  if (it == links.end()) return;
  detacher().add(std::move(it->second));
  links.erase(it);
}

DetachPause::DetachPause() {
  detacher().pause();
}

DetachPause::~DetachPause() {
  detacher().resume();
}

}  // namespace pyebpf::bpf
