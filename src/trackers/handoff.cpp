// SPDX-License-Identifier: Apache-2.0
#include "trackers/handoff.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "bpf/libc_probes.hpp"
#include "handoff.h"
#include "handoff.skel.h"
#include "pyebpf/error.hpp"
#include "trackers/bpf_counters.hpp"
#include "trackers/event_fields.hpp"
#include "util/files.hpp"

namespace pyebpf::trackers {
namespace {

// The reader is woken once this much waits in the ring buffer, and drains it
// every second anyway (tick): one wakeup per ~500 events instead of one each,
// which is most of the tracker's cost at high request rates.
constexpr std::uint64_t kWakeupBytes = 64 * 1024;

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

void HandoffTracker::SkelDeleter::operator()(handoff_bpf* skel) const noexcept {
  handoff_bpf__destroy(skel);
}

HandoffTracker::HandoffTracker() = default;
HandoffTracker::~HandoffTracker() = default;

void HandoffTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  skel_.reset(handoff_bpf__open());
  if (!skel_) throw Error(errno_text("handoff: open BPF object", errno));
  skel_->rodata->targ_min_handoff_ns = static_cast<std::uint64_t>(ctx.options.handoff_min_ms * 1e6);
  skel_->rodata->targ_wakeup_bytes = kWakeupBytes;

  ctx.shared_maps.reuse_in(skel_->obj);
  if (int err = handoff_bpf__load(skel_.get()))
    throw Error(errno_text("handoff: load BPF object", -err), "run with -vv to see the verifier log");
  for (const auto& t : ctx.targets.all()) {
    if (!t.exited) attach_process(t.pid);
  }
  events_.emplace(
      skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "handoff");

  interval_start_ns_ = monotonic_ns();
  for (const auto& t : ctx.targets.all()) {
    auto pid = static_cast<std::uint32_t>(t.pid);
    PerProcess p;
    p.last = totals(pid).value_or(HandoffTotals{});
    p.container_pid = container_pid_of(t.pid);
    procs_[pid] = p;
  }
  spdlog::info(
      "handoff: accept4/accept, epoll_ctl DEL -> recv/recvfrom/recvmsg/read/readv by another thread; close "
      "cancels; min {} ms, request_queue every {} s{}",
      ctx.options.handoff_min_ms, ctx.options.rq_interval_s, ctx.options.disable_request_queue ? " (disabled)" : "");
}

void HandoffTracker::attach_process(pid_t pid) {
  auto* p = &skel_->progs;
  const std::vector<bpf::LibcProbe> probes = {
      {"accept4", p->handoff_accept_ret, true},
      {"accept", p->handoff_accept_ret, true},
      {"epoll_ctl", p->handoff_epoll_ctl},
      {"recv", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVFROM},
      {"recvfrom", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVFROM},
      {"recvmsg", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVMSG},
      {"read", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_READ},
      {"readv", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_READV},
      {"close", p->handoff_close},
  };
  if (auto links = bpf::attach_libc_probes(pid, probes, "handoff", "its requests are not seen"))
    process_links_[pid] = std::move(*links);
  else
    ++unhooked_;
}

std::vector<int> HandoffTracker::wait_fds() const {
  return events_->wait_fds();
}

void HandoffTracker::consume() {
  events_->consume();
}

void HandoffTracker::handle(const void* data, std::size_t size) {
  if (size < sizeof(pyebpf_handoff_event)) {
    ++malformed_;
    return;
  }
  pyebpf_handoff_event ev{};
  std::memcpy(&ev, data, sizeof(ev));
  const std::uint64_t queued_ns = ev.hdr.ts_ns;
  const double handoff_ms = round_ms(static_cast<double>(ev.pickup_ns - queued_ns) / 1e6);

  // ts is the queue time (the start of the wait), like every duration event.
  sinks::Event e = thread_event("handoff", *ctx_, ev.hdr);
  e["duration_ms"] = handoff_ms;
  e["worker_tid"] = ev.hdr.tid;
  e["worker_comm"] = e["comm"];
  e["worker_thread_name"] = e["thread_name"];
  std::string main_comm = comm_text(ev.main.comm);
  e["main_tid"] = ev.main.tid;
  e["main_comm"] = main_comm;
  e["main_thread_name"] = thread_name(*ctx_, ev.hdr.pid, ev.main.thread_id, ev.main.ns_tid, main_comm);
  e["worker_container_tid"] = ev.hdr.ns_tid;
  e["main_container_tid"] = ev.main.ns_tid;
  e["fd"] = ev.fd;
  e["queue_path"] = path_name(ev.main.path);
  e["pickup_via"] = via_name(ev.pickup_via);
  e["queued_time"] = iso8601_utc(ctx_->clock.epoch_us(queued_ns));
  e["pickup_time"] = iso8601_utc(ctx_->clock.epoch_us(ev.pickup_ns));
  e["handoff_ms"] = handoff_ms;
  ctx_->targets.count_event(static_cast<pid_t>(ev.hdr.pid));
  ctx_->sink.write(e);
  ++emitted_;
}

std::map<std::uint32_t, HandoffTracker::Backlog> HandoffTracker::backlog() {
  std::map<std::uint32_t, Backlog> out;
  std::set<std::uint32_t> live;
  for (const auto& t : ctx_->targets.all()) {
    if (!t.exited) live.insert(static_cast<std::uint32_t>(t.pid));
  }
  int fd = bpf_map__fd(skel_->maps.queued);
  std::vector<std::uint64_t> stale;
  std::uint64_t key = 0, next = 0;
  const std::uint64_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    pyebpf_handoff_queued q{};
    if (bpf_map_lookup_elem(fd, &key, &q)) continue;  // picked up meanwhile
    auto pid = static_cast<std::uint32_t>(key >> 32);
    if (!live.count(pid)) {
      stale.push_back(key);  // a target that exited: its fds are gone
      continue;
    }
    Backlog& b = out[pid];
    ++b.count;
    if (b.oldest_ns == 0 || q.ts_ns < b.oldest_ns) b.oldest_ns = q.ts_ns;
  }
  for (auto k : stale) bpf_map_delete_elem(fd, &k);
  return out;
}

std::optional<HandoffTotals> HandoffTracker::totals(std::uint32_t pid) const {
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return std::nullopt;
  std::vector<pyebpf_handoff_stats> per_cpu(static_cast<std::size_t>(ncpus));
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stats), &pid, per_cpu.data())) return std::nullopt;
  HandoffTotals t;
  for (const auto& s : per_cpu) t.add(s);
  return t;
}

std::uint64_t HandoffTracker::workers_since(std::uint32_t pid, std::uint64_t since_ns) const {
  int fd = bpf_map__fd(skel_->maps.workers);
  std::uint64_t count = 0, key = 0, next = 0;
  const std::uint64_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    std::uint64_t last_ns = 0;
    if ((key >> 32) != pid || bpf_map_lookup_elem(fd, &key, &last_ns)) continue;
    count += last_ns >= since_ns;
  }
  return count;
}

void HandoffTracker::emit_request_queue(std::uint32_t pid, PerProcess& p, const Backlog& now_backlog,
                                        std::uint64_t now_ns) {
  HandoffTotals cumulative = totals(pid).value_or(p.last);
  HandoffTotals d = cumulative.since(p.last);
  p.last = cumulative;

  sinks::Event e;
  e["metric"] = "request_queue";
  e["env"] = ctx_->options.env;
  add_time(e, ctx_->clock, now_ns);
  e["pid"] = pid;
  e["container_pid"] = p.container_pid;
  e["comm"] = read_comm(static_cast<pid_t>(pid), static_cast<pid_t>(pid));
  e["interval_s"] = round_ms(static_cast<double>(now_ns - interval_start_ns_) / 1e9);
  e["queued_now"] = now_backlog.count;
  e["queued_max"] = std::max(p.queued_max, now_backlog.count);
  e["oldest_queued_ms"] = now_backlog.oldest_ns && now_ns > now_backlog.oldest_ns
                              ? round_ms(static_cast<double>(now_ns - now_backlog.oldest_ns) / 1e6)
                              : 0.0;
  e["queued"] = d.queued;
  e["picked_up"] = d.picked;
  e["cancelled"] = d.cancelled;
  e["served_inline"] = d.same_thread;
  e["peer_closed"] = d.peer_closed;
  e["handoff_mean_ms"] = d.picked ? round_ms(static_cast<double>(d.sum_ns) / static_cast<double>(d.picked) / 1e6) : 0.0;
  e["handoff_p50_ms"] = round_ms(histogram_quantile_us(d.hist, 0.50) / 1000.0);
  e["handoff_p99_ms"] = round_ms(histogram_quantile_us(d.hist, 0.99) / 1000.0);
  e["threads_used"] = workers_since(pid, interval_start_ns_);
  ctx_->sink.write(e);
  ++summaries_;
  p.queued_max = 0;
}

void HandoffTracker::tick() {
  consume();  // events below the wakeup threshold wait for this
  if (ctx_->options.disable_request_queue) return;
  std::uint64_t now = monotonic_ns();
  auto queued = backlog();
  for (auto& [pid, p] : procs_) p.queued_max = std::max(p.queued_max, queued[pid].count);
  if (static_cast<double>(now - interval_start_ns_) < ctx_->options.rq_interval_s * 1e9 - 5e8) return;
  for (const auto& t : ctx_->targets.all()) {
    if (t.exited) continue;
    auto pid = static_cast<std::uint32_t>(t.pid);
    emit_request_queue(pid, procs_[pid], queued[pid], now);
  }
  interval_start_ns_ = now;
}

std::string HandoffTracker::summary() const {
  if (!skel_) return "handoff: not started";
  Counters c = read_counters(skel_->maps.counters);
  return fmt::format(
      "handoff: {} fds queued, {} handoffs emitted, {} below --handoff-min-ms, {} lost (ring buffer "
      "full), {} queue-map updates failed, {} request_queue summaries{}",
      c[PYEBPF_CNT_HITS], emitted_, c[PYEBPF_CNT_FILTERED], c[PYEBPF_CNT_RINGBUF_FULL] + malformed_,
      c[PYEBPF_HANDOFF_CNT_QUEUE_FULL] + c[PYEBPF_HANDOFF_CNT_STATS_FULL], summaries_,
      unhooked_ ? fmt::format(", {} target(s) not hooked (see the warnings)", unhooked_) : "");
}

}  // namespace pyebpf::trackers
