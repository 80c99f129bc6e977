// SPDX-License-Identifier: Apache-2.0
#include "bpf/detach.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace pyebpf::bpf {
namespace {

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

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to detach
      std::vector<Link> batch = std::move(queue_);
      queue_.clear();
      lock.unlock();
      batch.clear();  // the slow part, outside the lock
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Link> queue_;
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

}  // namespace pyebpf::bpf
