// SPDX-License-Identifier: Apache-2.0
#include "python/thread_names.hpp"

#include <algorithm>

#include "util/clock.hpp"

namespace pyebpf::python {

ThreadNames::ThreadNames(const ObjectReader& objects, std::uint64_t interpreter_state_ptr)
    : objects_(objects), interp_ptr_(interpreter_state_ptr) {}

std::optional<std::uint64_t> ThreadNames::active_dict() {
  // threading._active is created once at import and never rebound, so its
  // address is kept; it is re-found only if it stops being a dict.
  if (active_ && objects_.type_of(*active_) == objects_.types().dict) return active_;
  active_.reset();
  const OffsetsRow& off = objects_.offsets();
  auto interp = objects_.memory().read_u64(interp_ptr_);
  if (!interp || !*interp) return std::nullopt;
  auto modules = objects_.memory().read_u64(*interp + off.require("interp.modules"));
  if (!modules) return std::nullopt;
  auto threading = objects_.dict_get(*modules, "threading");
  if (!threading) return std::nullopt;  // not imported (yet): only MainThread exists
  auto module_dict = objects_.memory().read_u64(*threading + off.require("module.dict"));
  if (!module_dict) return std::nullopt;
  active_ = objects_.dict_get(*module_dict, "_active");
  return active_;
}

std::optional<std::int64_t> ThreadNames::active_used() const {
  if (!active_) return std::nullopt;
  return objects_.memory().read_value<std::int64_t>(*active_ + objects_.offsets().require("dict.used"));
}

void ThreadNames::refresh() {
  last_refresh_ns_ = monotonic_ns();
  auto active = active_dict();
  if (!active) return;
  used_at_refresh_ = active_used().value_or(-1);
  std::unordered_map<std::uint64_t, std::string> fresh;
  objects_.for_each_dict_item(*active, [&](std::uint64_t key, std::uint64_t thread) {
    auto ident = objects_.read_int(key);
    if (!ident) return;
    auto name_obj = objects_.instance_attr(thread, "_name");
    if (!name_obj) return;
    if (auto name = objects_.read_str(*name_obj, 256)) fresh[static_cast<std::uint64_t>(*ident)] = *name;
  });
  if (!fresh.empty()) names_ = std::move(fresh);
}

std::optional<std::string> ThreadNames::name(std::uint64_t thread_ident) {
  std::uint64_t now = monotonic_ns();
  auto it = names_.find(thread_ident);
  bool want = now - last_refresh_ns_ > kMaxAgeNs;
  auto miss = unnamed_.end();
  if (it == names_.end()) {
    miss = unnamed_.find(thread_ident);
    want = want || miss == unnamed_.end() || now >= miss->second.at_ns;
    // Registered since? A thread is often looked up just before threading
    // adds it (e.g. while it waits for the GIL to start running): retry at
    // once when _active changed size, whatever the backoff says.
    want = want || active_used().value_or(used_at_refresh_) != used_at_refresh_;
  }
  if (want && now - last_refresh_ns_ > kMinRefreshNs) {
    refresh();
    it = names_.find(thread_ident);
    if (it != names_.end()) {
      unnamed_.erase(thread_ident);
    } else {
      std::uint64_t backoff =
          miss == unnamed_.end() ? kFirstRetryNs : std::min(miss->second.backoff_ns * 2, kMaxRetryNs);
      if (unnamed_.size() > 4096) unnamed_.clear();
      unnamed_[thread_ident] = Retry{now + backoff, backoff};
    }
  }
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

}  // namespace pyebpf::python
