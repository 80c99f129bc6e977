// SPDX-License-Identifier: Apache-2.0
#include "trackers/event_fields.hpp"

#include <cstring>

#include "python/unicode.hpp"

namespace pyebpf::trackers {

void add_time(sinks::Event& event, const WallClock& clock, std::uint64_t monotonic_ns, const char* iso_key,
              const char* us_key) {
  std::int64_t us = clock.epoch_us(monotonic_ns);
  event[iso_key] = iso8601_utc(us);
  event[us_key] = us;
}

std::optional<std::string> python_thread_name(TrackerContext& ctx, std::uint32_t pid, std::uint64_t thread_ident,
                                              std::uint32_t ns_tid) {
  auto* python = ctx.targets.python(static_cast<pid_t>(pid));
  if (!python || !thread_ident) return std::nullopt;
  return python->thread_names().name(thread_ident, ns_tid);
}

std::string thread_name(TrackerContext& ctx, std::uint32_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                        std::string_view comm) {
  return python_thread_name(ctx, pid, thread_ident, ns_tid).value_or(std::string(comm));
}

std::string comm_text(const char (&comm)[PYEBPF_COMM_LEN]) {
  return python::sanitize_utf8(std::string_view(comm, strnlen(comm, PYEBPF_COMM_LEN)));
}

sinks::Event thread_event(std::string_view metric, TrackerContext& ctx, const pyebpf_event_header& hdr) {
  std::string comm = comm_text(hdr.comm);
  sinks::Event e;
  e["metric"] = metric;
  e["env"] = ctx.options.env;
  add_time(e, ctx.clock, hdr.ts_ns);
  e["pid"] = hdr.pid;
  e["tid"] = hdr.tid;
  e["container_pid"] = hdr.ns_pid;
  e["container_tid"] = hdr.ns_tid;
  e["comm"] = comm;
  e["thread_name"] = thread_name(ctx, hdr.pid, hdr.thread_id, hdr.ns_tid, comm);
  return e;
}

}  // namespace pyebpf::trackers
