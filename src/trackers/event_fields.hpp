// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common.h"
#include "sinks/sink.hpp"
#include "trackers/tracker.hpp"

namespace pyebpf::trackers {

// The fields every thread-level event starts with, in this order: metric, env,
// ts, ts_us, pid, tid, container_pid, container_tid, comm, thread_name.
// thread_name is the threading.Thread name when the thread has one, else the
// kernel thread name.
sinks::Event thread_event(std::string_view metric, TrackerContext& ctx, const pyebpf_event_header& hdr);

// A kernel thread name (task comm) from BPF, as valid UTF-8.
std::string comm_text(const char (&comm)[PYEBPF_COMM_LEN]);

// "ts" and "ts_us" for a BPF timestamp.
void add_time(sinks::Event& event, const WallClock& clock, std::uint64_t monotonic_ns, const char* iso_key = "ts",
              const char* us_key = "ts_us");

// The threading name of (pid, thread ident, tid in the target's pid
// namespace), if the target is a Python process that named that thread.
std::optional<std::string> python_thread_name(TrackerContext& ctx, std::uint32_t pid, std::uint64_t thread_ident,
                                              std::uint32_t ns_tid);
// That name, else comm.
std::string thread_name(TrackerContext& ctx, std::uint32_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                        std::string_view comm);

}  // namespace pyebpf::trackers
