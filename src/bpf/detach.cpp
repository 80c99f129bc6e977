// SPDX-License-Identifier: Apache-2.0
#include "bpf/detach.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace pyebpf::bpf {
namespace {

constexpr auto kQuiet = std::chrono::seconds(1);
// Each link holds two descriptors (the link's and its perf event's).
constexpr std::size_t kMaxDeferred = 512;

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
  // One link at a time, so an attach waits for one detach at most.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || (!queue_.empty() && pauses_ == 0); });
      if (queue_.empty()) return;  // stopping, and nothing left to detach
      if (!stopping_ && queue_.size() <= kMaxDeferred && std::chrono::steady_clock::now() < quiet_from_) {
        wake_.wait_until(lock, quiet_from_);
        continue;
      }
      Link link = std::move(queue_.back());
      queue_.pop_back();
      lock.unlock();
      link.reset();  // the slow part, outside the lock
      lock.lock();
    }
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
