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
// no pause, no py-spy binary. Re-read when an unknown ident shows up (a thread
// started after attach), at most every kMinRefreshNs, and periodically so
// renames are seen.
class ThreadNames {
 public:
  ThreadNames(const ObjectReader& objects, std::uint64_t interpreter_state_ptr);

  std::optional<std::string> name(std::uint64_t thread_ident);
  void refresh();

 private:
  std::optional<std::uint64_t> active_dict();

  static constexpr std::uint64_t kMinRefreshNs = 100'000'000;      // 100 ms
  static constexpr std::uint64_t kMaxAgeNs = 5'000'000'000;        // 5 s

  const ObjectReader& objects_;
  std::uint64_t interp_ptr_;  // address of the pointer to the main PyInterpreterState
  std::optional<std::uint64_t> active_;  // threading._active dict, found once
  std::unordered_map<std::uint64_t, std::string> names_;
  std::uint64_t last_refresh_ns_ = 0;
};

}  // namespace pyebpf::python
