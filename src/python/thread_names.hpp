// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "python/objects.hpp"

namespace pyebpf::python {

// threading.Thread names of a target, read from its memory the way py-spy
// does: sys.modules['threading']._active maps thread idents (pthread_t, which
// BPF reports per event) to Thread objects, whose _name is the name. No ptrace,
// no pause, no py-spy binary. An ident is only an address: glibc hands a
// finished thread's stack and pthread_t to the next thread it creates, so a
// name is kept with the thread's _native_id (its tid as the target sees it)
// and only given to that thread. One exception: after fork() the thread that
// forked keeps its parent's _native_id (threading._after_fork does not reset
// it); it is the child's first thread, whose pthread_t is never reused, so
// that thread is matched by ident alone. Re-read at once when a thread is seen for the
// first time (started after attach, or reusing an ident); for one still unnamed
// (sampled before threading registered it, or a native thread that never gets
// a name) retry with a backoff from kFirstRetryNs doubling to kMaxRetryNs, or
// at once when _active had an insertion since the last read, and look in
// threading._limbo, where a thread waits between start() and registering; and
// re-read when the names are older than kMaxAgeNs so renames are seen.
//
// A re-read reads only _active's new entries. Each insertion into a dict takes
// the next slot of its keys table and a resize moves them all to a new table,
// so a (keys table, slot) pair holding the same key and Thread pointers as at
// the last read is the same registration. Addresses alone would not do: the
// allocator gives a finished thread's Thread object and ident int to the next
// thread, which registers in a new slot. Renames need the full re-read.
class ThreadNames {
 public:
  // `leader_ns_tid`: the process's pid in its own pid namespace.
  ThreadNames(const ObjectReader& objects, std::uint64_t interpreter_state_ptr, std::uint32_t leader_ns_tid);

  // `native_id`: the thread's tid in its own pid namespace, 0 if unknown.
  std::optional<std::string> name(std::uint64_t thread_ident, std::uint32_t native_id);
  // Reads _active's entries added since the last read (all of them if `full`).
  void refresh(bool full = false);

 private:
  // The dict threading.<name>, cached in `cached`. A failed look-up (threading
  // not imported, as in a script that starts no thread; an unreadable
  // sys.modules) is not repeated before the back-off below has passed.
  std::optional<std::uint64_t> threading_dict(std::optional<std::uint64_t>& cached, std::string_view name);
  std::optional<std::uint64_t> find_threading_dict(std::string_view name) const;
  std::optional<std::string> starting_thread_name(std::uint64_t thread_ident);
  // Where the next insertion into threading._active goes: its keys table and
  // the table's count of entries ever used. Any insertion changes it (a size
  // would not: one thread exiting as another starts), for one 16-byte read.
  struct Insertions {
    std::uint64_t keys = 0;
    std::int64_t nentries = -1;
    bool operator==(const Insertions&) const = default;
  };
  std::optional<Insertions> active_insertions() const;

  static constexpr std::uint64_t kMinRefreshNs = 250'000;  // bounds the cost of bursts of new threads
  static constexpr std::uint64_t kFirstRetryNs = 10'000'000;
  static constexpr std::uint64_t kMaxRetryNs = 2'000'000'000;
  static constexpr std::uint64_t kMaxAgeNs = 5'000'000'000;

  const ObjectReader& objects_;
  std::uint64_t interp_ptr_;  // address of the pointer to the main PyInterpreterState
  std::uint32_t leader_ns_tid_;
  std::optional<std::uint64_t> active_;  // threading._active dict, found once
  std::optional<std::uint64_t> limbo_;   // threading._limbo dict, found once
  // When threading's dicts may be looked for again after a failed look-up:
  // a back-off from kFirstRetryNs doubling to kMaxRetryNs, cut short by a
  // thread not seen before. Without it a target that never imports threading
  // had sys.modules read (every key's string) at each event: ~120 reads of
  // its memory per py_stack sample, a third of a core at 999 Hz (issue 31).
  std::uint64_t lookup_at_ns_ = 0;
  std::uint64_t lookup_backoff_ns_ = 0;
  std::uint64_t last_lookup_ns_ = 0;
  struct Named {
    std::string name;
    std::uint32_t native_id;  // Thread._native_id, 0 if unset
  };
  // One slot of _active's entry table as last read; `named` is empty for a
  // deleted slot or a Thread that could not be read.
  struct Slot {
    std::uint64_t key = 0;
    std::uint64_t thread = 0;
    std::uint64_t ident = 0;
    std::optional<Named> named;
  };
  // A Thread's _ident and its name and _native_id; nothing if unreadable.
  std::optional<std::pair<std::int64_t, Named>> read_thread(std::uint64_t thread) const;
  Slot read_slot(std::uint64_t key, std::uint64_t thread) const;
  std::uint64_t slots_keys_ = 0;  // the keys table `slots_` were read from
  std::vector<Slot> slots_;
  using Names = std::unordered_map<std::uint64_t, const Slot*>;  // by ident, into slots_
  Names::const_iterator find(std::uint64_t thread_ident, std::uint32_t native_id) const;
  Names names_;
  struct Retry {
    std::uint64_t at_ns;
    std::uint64_t backoff_ns;
  };
  std::map<std::pair<std::uint64_t, std::uint32_t>, Retry> unnamed_;  // by (ident, native id)
  // Names found in threading._limbo, by (ident, native id), for threads not
  // yet in _active: a starting thread's next events within the back-off get
  // the name without a read. Dropped once the thread is found in _active.
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::string> starting_;
  std::uint64_t last_refresh_ns_ = 0;
  std::uint64_t last_full_ns_ = 0;
  Insertions insertions_at_refresh_;
};

}  // namespace pyebpf::python
