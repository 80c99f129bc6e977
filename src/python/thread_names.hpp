// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "python/objects.hpp"

namespace pyebpf::python {

// threading.Thread names of a target, read from its memory the way py-spy
// does: sys.modules['threading']._active maps thread idents (pthread_t, which
// BPF reports per event) to Thread objects, whose _name is the name. No ptrace,
// no pause, no py-spy binary. Re-read at once when an ident is seen for the
// first time (a thread started after attach); for an ident still unnamed
// (sampled before threading registered it, or a native thread that never gets
// a name) retry with a backoff from kFirstRetryNs doubling to kMaxRetryNs, or
// at once when _active changed size since the last read (one 8-byte read); and
// re-read when the names are older than kMaxAgeNs so renames are seen.
class ThreadNames {
 public:
  ThreadNames(const ObjectReader& objects, std::uint64_t interpreter_state_ptr);

  std::optional<std::string> name(std::uint64_t thread_ident);
  void refresh();

 private:
  std::optional<std::uint64_t> active_dict();
  std::optional<std::int64_t> active_used() const;  // len(threading._active) now

  static constexpr std::uint64_t kMinRefreshNs = 2'000'000;      // bounds the cost of bursts of new threads
  static constexpr std::uint64_t kFirstRetryNs = 10'000'000;
  static constexpr std::uint64_t kMaxRetryNs = 2'000'000'000;
  static constexpr std::uint64_t kMaxAgeNs = 5'000'000'000;

  const ObjectReader& objects_;
  std::uint64_t interp_ptr_;  // address of the pointer to the main PyInterpreterState
  std::optional<std::uint64_t> active_;  // threading._active dict, found once
  std::unordered_map<std::uint64_t, std::string> names_;
  struct Retry {
    std::uint64_t at_ns;
    std::uint64_t backoff_ns;
  };
  std::unordered_map<std::uint64_t, Retry> unnamed_;
  std::uint64_t last_refresh_ns_ = 0;
  std::int64_t used_at_refresh_ = -1;  // len(threading._active) at the last refresh
};

}  // namespace pyebpf::python
