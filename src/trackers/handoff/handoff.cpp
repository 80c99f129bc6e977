// SPDX-License-Identifier: Apache-2.0
#include "trackers/handoff/handoff.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "bpf_runtime/detach.hpp"
#include "bpf_runtime/libc_probes.hpp"
#include "handoff.h"
#include "handoff.skel.h"
#include "pyebpf/error.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/handoff/handoff_events.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/flag_rules.hpp"

namespace pyebpf::trackers {
namespace {

// The reader is woken once this much waits in the ring buffer, and drains it
// every second anyway (tick): one wakeup per ~500 events instead of one each,
// which is most of the tracker's cost at high request rates.
constexpr std::uint64_t kWakeupBytes = 64 * 1024;

}  // namespace

HandoffTracker::HandoffTracker(const HandoffOptions& options)
    : BpfTracker("handoff", {handoff_bpf__open, handoff_bpf__load, handoff_bpf__destroy}),
      options_(options),
      record_(handoff_schema()),
      summary_(request_queue_schema()) {}
HandoffTracker::~HandoffTracker() = default;

void HandoffTracker::start(TrackerContext& ctx) {
  open(ctx);
  skel_->rodata->targ_min_handoff_ns = static_cast<std::uint64_t>(options_.min_ms * 1e6);
  skel_->rodata->targ_wakeup_bytes = kWakeupBytes;

  skel_.load(ctx.shared_maps);
  add_targets();
  read_events();
  interval_start_ns_ = monotonic_ns();
  spdlog::info(
      "handoff: accept4/accept, epoll_ctl DEL -> recv/recvfrom/recvmsg/read/readv by another thread; close "
      "cancels; min {} ms, request_queue every {} s{}",
      options_.min_ms, options_.rq_interval_s, options_.disable_request_queue ? " (disabled)" : "");
}

void HandoffTracker::add_target(const Target& target) {
  auto pid = static_cast<std::uint32_t>(target.pid);
  attach_process(target.pid);
  PerProcess p;
  p.last = totals(pid).value_or(HandoffTotals{});
  p.container_pid = container_pid_of(target.pid);
  procs_[pid] = p;
}

// A worker recycled mid-interval still gets its last request_queue record;
// then its counters go, so a process reusing the pid starts from zero.
void HandoffTracker::remove_target(pid_t pid) {
  auto key = static_cast<std::uint32_t>(pid);
  auto it = procs_.find(key);
  if (it != procs_.end() && !options_.disable_request_queue)
    emit_request_queue(key, it->second, Backlog{}, monotonic_ns());
  bpf::detach_later(process_links_, pid);
  procs_.erase(key);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.stats), &key);
}

void HandoffTracker::attach_process(pid_t pid) {
  auto* p = &skel_->progs;
  // The programs read the fd (and epoll_ctl's op); only epoll_ctl's may run
  // after the system call: a DEL leaves the fd open, while after a read or a
  // close another thread could already have the fd for a new connection.
  const native::ProbeNeeds fd_arg{.args_read = 1};
  const std::vector<bpf::LibcProbe> probes = {
      {"accept4", p->handoff_accept_ret, true},
      {"accept", p->handoff_accept_ret, true},
      {"epoll_ctl", p->handoff_epoll_ctl, false, 0, {.args_read = 3, .may_follow_syscall = true}},
      {"recv", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVFROM, fd_arg},
      {"recvfrom", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVFROM, fd_arg},
      {"recvmsg", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_RECVMSG, fd_arg},
      {"read", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_READ, fd_arg},
      {"readv", p->handoff_pickup, false, PYEBPF_HANDOFF_VIA_READV, fd_arg},
      {"close", p->handoff_close, false, 0, fd_arg},
  };
  process_links_[pid] = bpf::attach_libc_probes(pid, probes, "handoff");
}

void HandoffTracker::handle(const void* data, std::size_t size) {
  deliver(decode_handoff(data, size, decode_context(*ctx_), record_), record_);
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

  const RequestQueueSchema& q = request_queue_schema();
  sinks::Record& r = summary_;
  const std::int64_t us = ctx_->clock.epoch_us(now_ns);
  r.clear();
  r.set_text(sinks::host_fields::env, ctx_->env);
  r.set_time(sinks::host_fields::ts, us);
  r.set_int(sinks::host_fields::ts_us, us);
  r.set_uint(q.pid, pid);
  r.set_uint(q.container_pid, p.container_pid);
  r.set_text(q.comm, read_comm(static_cast<pid_t>(pid), static_cast<pid_t>(pid)));
  r.set_float(q.interval_s, round_ms(static_cast<double>(now_ns - interval_start_ns_) / 1e9));
  r.set_uint(q.queued_now, now_backlog.count);
  r.set_uint(q.queued_max, std::max(p.queued_max, now_backlog.count));
  r.set_float(q.oldest_queued_ms,
              now_backlog.oldest_ns && now_ns > now_backlog.oldest_ns ? ns_to_ms(now_ns - now_backlog.oldest_ns) : 0.0);
  r.set_uint(q.queued, d.queued);
  r.set_uint(q.picked_up, d.picked);
  r.set_uint(q.cancelled, d.cancelled);
  r.set_uint(q.served_inline, d.same_thread);
  r.set_uint(q.peer_closed, d.peer_closed);
  r.set_float(q.handoff_mean_ms,
              d.picked ? round_ms(static_cast<double>(d.sum_ns) / static_cast<double>(d.picked) / 1e6) : 0.0);
  r.set_float(q.handoff_p50_ms, round_ms(histogram_quantile_us(d.hist, 0.50) / 1000.0));
  r.set_float(q.handoff_p99_ms, round_ms(histogram_quantile_us(d.hist, 0.99) / 1000.0));
  r.set_uint(q.threads_used, workers_since(pid, interval_start_ns_));
  ctx_->sink.write(r);
  ++summaries_;
  p.queued_max = 0;
}

void HandoffTracker::tick() {
  consume();  // events below the wakeup threshold wait for this
  if (options_.disable_request_queue) return;
  std::uint64_t now = monotonic_ns();
  auto queued = backlog();
  for (auto& [pid, p] : procs_) p.queued_max = std::max(p.queued_max, queued[pid].count);
  if (static_cast<double>(now - interval_start_ns_) < options_.rq_interval_s * 1e9 - 5e8) return;
  for (const auto& t : ctx_->targets.all()) {
    if (t.exited) continue;
    auto pid = static_cast<std::uint32_t>(t.pid);
    emit_request_queue(pid, procs_[pid], queued[pid], now);
  }
  interval_start_ns_ = now;
}

std::string HandoffTracker::summary_line() const {
  if (!skel_) return "handoff: not started";
  Counters c = read_counters(skel_->maps.counters);
  return fmt::format(
      "handoff: {} fds queued, {} handoffs emitted, {} below --handoff-min-ms, {} lost (ring buffer "
      "full){}, {} queue-map updates failed, {} request_queue summaries",
      c[PYEBPF_CNT_HITS], counts_.emitted, c[PYEBPF_CNT_FILTERED], c[PYEBPF_CNT_RINGBUF_FULL],
      malformed_note(counts_.malformed), c[PYEBPF_HANDOFF_CNT_QUEUE_FULL] + c[PYEBPF_HANDOFF_CNT_STATS_FULL],
      summaries_);
}

const TrackerDescriptor& handoff_tracker() {
  static const TrackerDescriptor d{
      .name = "handoff",
      .help = "request queue time in servers (gunicorn gthread)",
      .schemas = {&handoff_schema(), &request_queue_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<HandoffOptions>();
        auto* handoff = cli.add_option_group("handoff", "Request queue time in servers (gunicorn gthread, uwsgi)");
        flags::check(handoff->add_option("--handoff-min-ms", o->min_ms,
                                         "Emit handoff events only at or above this wait (default 0)"),
                     flags::zero_or_more("ms", "10"));
        flags::check(handoff->add_option("--rq-interval", o->rq_interval_s,
                                         "Seconds between request_queue summaries (default 10)"),
                     flags::between(1, 86400, "seconds", "10"));
        handoff->add_flag("--disable-request-queue", o->disable_request_queue, "Do not emit request_queue summaries");
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<HandoffTracker>(static_cast<const HandoffOptions&>(*o));
      },
      .report = make_handoff_report,
      .top = [](const TrackerOptions*, const sinks::Record& r, live::Tally& tally) { handoff_top(r, tally); },
  };
  return d;
}

}  // namespace pyebpf::trackers
