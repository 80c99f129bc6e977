// SPDX-License-Identifier: Apache-2.0
#include "python/thread_names.hpp"

#include <algorithm>

#include "util/clock.hpp"

namespace pyebpf::python {

ThreadNames::ThreadNames(const ObjectReader& objects, std::uint64_t interpreter_state_ptr, std::uint32_t leader_ns_tid)
    : objects_(objects), interp_ptr_(interpreter_state_ptr), leader_ns_tid_(leader_ns_tid) {}

std::optional<std::uint64_t> ThreadNames::threading_dict(std::optional<std::uint64_t>& cached, std::string_view name) {
  // threading's _active and _limbo are created once at import and never
  // rebound (_after_fork clears and refills them), so their addresses are
  // kept; one is re-found only if it stops being a dict.
  if (cached && objects_.type_of(*cached) == objects_.types().dict) return cached;
  cached.reset();
  const std::uint64_t now = monotonic_ns();
  if (now < lookup_at_ns_) return std::nullopt;
  last_lookup_ns_ = now;
  cached = find_threading_dict(name);
  if (cached) {
    lookup_backoff_ns_ = 0;
  } else {
    lookup_backoff_ns_ = lookup_backoff_ns_ ? std::min(lookup_backoff_ns_ * 2, kMaxRetryNs) : kFirstRetryNs;
    lookup_at_ns_ = now + lookup_backoff_ns_;
  }
  return cached;
}

std::optional<std::uint64_t> ThreadNames::find_threading_dict(std::string_view name) const {
  return objects_.module_global(interp_ptr_, "threading", name);
}

std::optional<std::string> ThreadNames::starting_thread_name(std::uint64_t thread_ident) {
  // threading._limbo holds each Thread from start() until it registers in
  // _active. One past _set_ident() but not yet registered (a collection in
  // _set_tstate_lock, say) is found here by its _ident: a pthread_t is
  // unique among live threads, and a starting thread is live.
  ProcessMemory::Batch batch(objects_.memory());
  auto limbo = threading_dict(limbo_, "_limbo");
  if (!limbo) return std::nullopt;
  auto entries = objects_.dict_entries(*limbo, 64);
  if (!entries) return std::nullopt;
  for (auto [key, thread] : entries->slots) {
    if (!key) continue;
    auto read = read_thread(thread);
    if (read && read->first == static_cast<std::int64_t>(thread_ident)) return std::move(read->second.name);
  }
  return std::nullopt;
}

std::optional<ThreadNames::Insertions> ThreadNames::active_insertions() const {
  if (!active_) return std::nullopt;
  const OffsetsRow& off = objects_.offsets();
  auto keys = objects_.memory().read_u64(*active_ + off.require("dict.keys"));
  if (!keys || !*keys) return std::nullopt;
  auto nentries = objects_.memory().read_value<std::int64_t>(*keys + off.require("dictkeys.nentries"));
  if (!nentries) return std::nullopt;
  return Insertions{*keys, *nentries};
}

std::optional<std::pair<std::int64_t, ThreadNames::Named>> ThreadNames::read_thread(std::uint64_t thread) const {
  auto attrs = objects_.instance_attrs(thread, {"_ident", "_name", "_native_id"});
  if (!attrs[0] || !attrs[1]) return std::nullopt;
  auto ident = objects_.read_int(*attrs[0]);
  auto name = objects_.read_str(*attrs[1], 256);
  if (!ident || !name) return std::nullopt;
  std::uint32_t native_id = 0;  // threading sets it before registering the thread (3.8+)
  if (attrs[2]) native_id = static_cast<std::uint32_t>(objects_.read_int(*attrs[2]).value_or(0));
  return std::pair{*ident, Named{std::move(*name), native_id}};
}

ThreadNames::Slot ThreadNames::read_slot(std::uint64_t key, std::uint64_t thread) const {
  Slot slot{key, thread, 0, std::nullopt};
  auto ident = objects_.read_int(key);
  if (!ident) return slot;
  // _active maps each Thread's _ident to it: a Thread whose own _ident
  // reads back differently is read with a layout that does not fit this
  // build (instance dicts and inline values are not in _Py_DebugOffsets),
  // and gets no name rather than a wrong one.
  auto read = read_thread(thread);
  if (!read || read->first != *ident) return slot;
  slot.ident = static_cast<std::uint64_t>(*ident);
  slot.named = std::move(read->second);
  return slot;
}

void ThreadNames::refresh(bool full) {
  ProcessMemory::Batch batch(objects_.memory());
  last_refresh_ns_ = monotonic_ns();
  auto active = threading_dict(active_, "_active");
  if (!active) {
    last_full_ns_ = last_refresh_ns_;  // nothing to re-read for renames either
    return;
  }
  auto table = objects_.dict_entries(*active);
  if (!table) return;
  insertions_at_refresh_ = Insertions{table->keys, static_cast<std::int64_t>(table->used)};
  if (full || table->keys != slots_keys_ || table->slots.size() < slots_.size()) {
    slots_.clear();
    last_full_ns_ = last_refresh_ns_;
  }
  std::vector<Slot> next(table->slots.size());
  for (std::size_t i = 0; i < next.size(); ++i) {
    auto [key, thread] = table->slots[i];
    if (!key) continue;
    // A Thread that could not be read stays unnamed until the next full
    // read: with a layout that does not fit, re-reading every one of them
    // at each insertion would cost what the incremental read saves.
    if (i < slots_.size() && slots_[i].key == key && slots_[i].thread == thread)
      next[i] = std::move(slots_[i]);
    else
      next[i] = read_slot(key, thread);
  }
  slots_keys_ = table->keys;
  slots_ = std::move(next);
  names_.clear();
  for (const Slot& slot : slots_)
    if (slot.named) names_[slot.ident] = &slot;
}

ThreadNames::Names::const_iterator ThreadNames::find(std::uint64_t thread_ident, std::uint32_t native_id) const {
  auto it = names_.find(thread_ident);
  if (it == names_.end() || !native_id || !it->second->named->native_id || it->second->named->native_id == native_id ||
      native_id == leader_ns_tid_)
    return it;
  return names_.end();  // the same ident on another thread: the named one has exited since
}

std::optional<std::string> ThreadNames::name(std::uint64_t thread_ident, std::uint32_t native_id) {
  std::uint64_t now = monotonic_ns();
  const std::pair key{thread_ident, native_id};
  auto it = find(thread_ident, native_id);
  bool stale = now - last_full_ns_ > kMaxAgeNs;
  bool want = stale;
  bool inserted = false;
  auto miss = unnamed_.end();
  if (it == names_.end()) {
    miss = unnamed_.find(key);
    // A thread not seen before may be the first threading made: look for
    // threading again soon, whatever the back-off says (bounded below).
    if (miss == unnamed_.end()) lookup_at_ns_ = std::min(lookup_at_ns_, last_lookup_ns_ + kFirstRetryNs);
    want = want || miss == unnamed_.end() || now >= miss->second.at_ns;
    // Registered since? A thread is often looked up just before threading
    // adds it (e.g. while it waits for the GIL to start running): retry at
    // once when _active had an insertion, whatever the backoff or the
    // refresh bound say. Two threads started together showed why: the
    // first one's refresh came before the second was registered, and a
    // batch of the second's samples, named within the bound, all got the
    // process's name. Each insertion is read once, so bursts stay bounded.
    inserted = active_insertions().value_or(insertions_at_refresh_) != insertions_at_refresh_;
  }
  const bool refreshed = inserted || (want && now - last_refresh_ns_ > kMinRefreshNs);
  if (refreshed) {
    refresh(stale);
    it = find(thread_ident, native_id);
    if (it != names_.end()) {
      unnamed_.erase(key);
    } else {
      std::uint64_t backoff =
          miss == unnamed_.end() ? kFirstRetryNs : std::min(miss->second.backoff_ns * 2, kMaxRetryNs);
      if (unnamed_.size() > 4096) unnamed_.clear();
      unnamed_[key] = Retry{now + backoff, backoff};
    }
  }
  if (it != names_.end()) {
    if (!starting_.empty()) starting_.erase(key);
    return it->second->named->name;
  }
  // Not registered yet, or not a threading thread: named from _limbo (kept
  // until the thread is in _active, which names it from then on).
  if (!refreshed) {
    auto s = starting_.find(key);
    return s == starting_.end() ? std::nullopt : std::optional<std::string>(s->second);
  }
  auto name = starting_thread_name(thread_ident);
  if (!name) {
    starting_.erase(key);  // left _limbo without registering (exited), or never a threading thread
  } else {
    if (starting_.size() > 4096) starting_.clear();
    starting_[key] = *name;
  }
  return name;
}

}  // namespace pyebpf::python
