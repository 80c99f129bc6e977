// SPDX-License-Identifier: Apache-2.0
#include "trackers/common/degradations.hpp"

#include <spdlog/spdlog.h>

namespace pyebpf::trackers {

void Degradations::add(const std::string& tracker, pid_t pid, const std::string& reason, const std::string& hint) {
  std::string what = tracker.empty() ? "not traced" : tracker + " disabled";
  if (pid) what += " for pid " + std::to_string(pid);
  std::string line = what + ": " + reason;
  spdlog::warn("{}{}", line, hint.empty() ? "" : " (hint: " + hint + ")");
  lines_.push_back(std::move(line));
}

void TargetFailures::add(pid_t pid, const std::string& who, const Error& e) {
  failures_.push_back({pid, who, e.what(), e.hint()});
}

void TargetFailures::settle(const std::string& tracker, std::size_t traced, Degradations& degraded) const {
  if (traced == 0) {
    if (failures_.empty()) return;  // none yet: --name, or children, may bring some
    const Failure& first = failures_.front();
    throw Error(tracker + ": pid " + std::to_string(first.pid) + " (" + first.who + "): " + first.what, first.hint);
  }
  for (const auto& f : failures_) degraded.add(tracker, f.pid, f.who + ": " + f.what, f.hint);
}

}  // namespace pyebpf::trackers
