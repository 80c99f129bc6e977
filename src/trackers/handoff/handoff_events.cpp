// SPDX-License-Identifier: Apache-2.0
#include "trackers/handoff/handoff_events.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "handoff.h"
#include "live/tally.hpp"
#include "sinks/report_text.hpp"

namespace pyebpf::trackers {
namespace {

const char* path_name(std::uint8_t path) {
  switch (path) {
    case PYEBPF_HANDOFF_PATH_ACCEPT:
      return "accept";
    case PYEBPF_HANDOFF_PATH_EPOLL_DEL:
      return "epoll_del";
    default:
      return "unknown";
  }
}

const char* via_name(std::uint8_t via) {
  switch (via) {
    case PYEBPF_HANDOFF_VIA_RECVFROM:
      return "recvfrom";
    case PYEBPF_HANDOFF_VIA_RECVMSG:
      return "recvmsg";
    case PYEBPF_HANDOFF_VIA_READ:
      return "read";
    case PYEBPF_HANDOFF_VIA_READV:
      return "readv";
    default:
      return "unknown";
  }
}

}  // namespace

const HandoffSchema& handoff_schema() {
  static const HandoffSchema schema;
  return schema;
}

const RequestQueueSchema& request_queue_schema() {
  static const RequestQueueSchema schema;
  return schema;
}

Decoded decode_handoff(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& r) {
  namespace tf = sinks::thread_fields;
  const HandoffSchema& s = handoff_schema();
  if (size < sizeof(pyebpf_handoff_event)) return Decoded::Malformed;
  pyebpf_handoff_event ev{};
  std::memcpy(&ev, data, sizeof(ev));
  const std::uint64_t queued_ns = ev.hdr.ts_ns;
  const double handoff_ms = ns_to_ms(ev.pickup_ns - queued_ns);

  r.clear();
  set_thread_fields(r, ctx, ev.hdr);
  r.set_float(s.duration_ms, handoff_ms);
  r.set_uint(s.worker_tid, ev.hdr.tid);
  r.set_text(s.worker_comm, r.text(tf::comm));
  r.set_text(s.worker_thread_name, r.text(tf::thread_name));
  std::string main_comm = comm_text(ev.main.comm);
  r.set_uint(s.main_tid, ev.main.tid);
  r.set_text(s.main_comm, main_comm);
  r.set_text(s.main_thread_name, thread_name(ctx, ev.hdr.pid, ev.main.thread_id, ev.main.ns_tid, main_comm));
  r.set_uint(s.worker_container_tid, ev.hdr.ns_tid);
  r.set_uint(s.main_container_tid, ev.main.ns_tid);
  r.set_int(s.fd, ev.fd);
  r.set_text(s.queue_path, path_name(ev.main.path));
  r.set_text(s.pickup_via, via_name(ev.pickup_via));
  r.set_time(s.queued_time, ctx.clock.epoch_us(queued_ns));
  r.set_time(s.pickup_time, ctx.clock.epoch_us(ev.pickup_ns));
  r.set_float(s.handoff_ms, handoff_ms);
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

// Request handoff: p50/p99 of the time from queued to picked up, overall and
// by worker thread, and what the request_queue summaries saw.
class HandoffSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    if (&r.schema() == &request_queue_schema()) {
      const RequestQueueSchema& q = request_queue_schema();
      ++summaries_;
      picked_up_ += static_cast<std::uint64_t>(r.number(q.picked_up).value_or(0));
      cancelled_ += static_cast<std::uint64_t>(r.number(q.cancelled).value_or(0));
      queued_max_ = std::max(queued_max_, r.number(q.queued_max).value_or(0));
      oldest_ms_ = std::max(oldest_ms_, r.number(q.oldest_queued_ms).value_or(0));
      threads_max_ = std::max(threads_max_, r.number(q.threads_used).value_or(0));
      return;
    }
    const HandoffSchema& s = handoff_schema();
    double d = r.number(s.handoff_ms).value_or(r.number(s.duration_ms).value_or(0));
    all_.add(d);
    std::string worker = field_text(r, s.worker_thread_name, field_text(r, s.worker_comm));
    if (by_worker_.size() < 256 || by_worker_.count(worker))
      by_worker_.try_emplace(worker, 10'000).first->second.add(d);
  }

  void render(std::string& out) const override {
    if (all_.count() == 0 && summaries_ == 0) return;
    heading(out,
            fmt::format("Request handoff (queued to picked up by a worker)  [handoff: {} requests]", all_.count()));
    if (summaries_ > 0) {
      wrapped(out, "  request_queue:",
              {fmt::format("{} summaries", summaries_), fmt::format("{} picked up", picked_up_),
               fmt::format("{} cancelled", cancelled_), fmt::format("at most {} waiting", queued_max_),
               fmt::format("oldest wait {} ms", ms(oldest_ms_)), fmt::format("{} worker threads", threads_max_)});
    }
    if (all_.count() == 0) return;
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const std::string& name, const Distribution& d) {
      rows.push_back({name, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    };
    row("all", all_);
    std::map<std::string, double> by_count;
    for (const auto& [w, d] : by_worker_) by_count[w] = static_cast<double>(d.count());
    if (by_worker_.size() > 1) {
      for (const auto& [w, c] : top(
               by_count, [](double x) { return x; }, 5))
        row(w, by_worker_.at(w));
    }
    table(out, {{"worker", 24}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}},
          rows);
  }

 private:
  Distribution all_;
  std::map<std::string, Distribution> by_worker_;
  std::uint64_t summaries_ = 0, picked_up_ = 0, cancelled_ = 0;
  double queued_max_ = 0, oldest_ms_ = 0, threads_max_ = 0;
};

}  // namespace

void handoff_top(const sinks::Record& r, live::Tally& tally) {
  const HandoffSchema& s = handoff_schema();
  const auto ms = &r.schema() == &s ? r.number(s.handoff_ms) : std::nullopt;
  if (ms) tally.pause("queued", *ms);
}

std::unique_ptr<sinks::ReportSection> make_handoff_report() {
  return std::make_unique<HandoffSection>();
}

}  // namespace pyebpf::trackers
