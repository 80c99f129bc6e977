// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp/tcp.hpp"

#include <bpf/bpf.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <map>

#include "bpf_runtime/detach.hpp"
#include "bpf_runtime/features.hpp"
#include "bpf_runtime/libc_probes.hpp"
#include "pyebpf/error.hpp"
#include "tcp.skel.h"
#include "trackers/tcp/tcp_existing.hpp"
#include "trackers/tcp/tcp_format.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/flag_rules.hpp"

namespace pyebpf::trackers {
namespace {

constexpr std::uint32_t kOwnersTargets = 65536;
constexpr std::uint32_t kOwnersHost = 262144;

constexpr std::uint64_t kWarnEveryNs = 10'000'000'000;

std::string feature_names(TcpFeatures f) {
  std::vector<std::string> names;
  if (f.connect) names.push_back("tcp_connect");
  if (f.accept) names.push_back("tcp_accept");
  if (f.loss) names.push_back("tcp_loss");
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

TcpTracker::TcpTracker(const TcpOptions& options, TcpFeatures features)
    : BpfTracker("tcp", {tcp_bpf__open, tcp_bpf__load, tcp_bpf__destroy}),
      options_(options),
      features_(features),
      name_(feature_names(features)) {}
TcpTracker::~TcpTracker() = default;

void TcpTracker::configure_hooks(bool host_scope) {
  const bool connect = features_.connect, accept = features_.accept, loss = features_.loss;
  auto* p = &skel_->progs;
  auto exists = [](const char* tp) { return bpf::kernel_has_btf_tracepoint(tp); };
  // accept() is hooked for tcp_accept only (tcp_loss alone attributes accepted
  // connections to their listener's owner instead): by uprobes in each target,
  // or, for every process on the host, by a sys_exit program, which puts every
  // system call on the machine on the kernel's syscall-tracing path.
  const bool accept_uprobes = accept && !host_scope;
  const bool accept_syscall = accept && host_scope;
  std::vector<const char*> required = {"inet_sock_set_state", "tcp_destroy_sock"};
  if (accept_syscall) required.push_back("sys_exit");
  for (const char* tp : required) {
    if (!exists(tp))
      throw Error(std::string("tcp: the kernel has no tracepoint ") + tp, "the TCP trackers need Linux >= 5.8");
  }
  bpf_program__set_autoload(p->tcp_accept_exit, accept_syscall);
  bpf_program__set_autoload(p->tcp_accept_enter, accept_uprobes);
  bpf_program__set_autoload(p->tcp_accept_return, accept_uprobes);
  bool synack = (accept || loss) && exists("tcp_retransmit_synack");
  bpf_program__set_autoload(p->tcp_retransmit_synack, synack);
  if ((accept || loss) && !synack)
    spdlog::warn("tcp: no tracepoint tcp_retransmit_synack: SYN-ACK retransmits not seen");

  auto optional_loss_hook = [&](bpf_program* prog, const char* tp, const char* lost) {
    bool ok = loss && exists(tp);
    bpf_program__set_autoload(prog, ok);
    if (loss && !ok) spdlog::warn("tcp_loss: no tracepoint {} in this kernel: {} not reported", tp, lost);
    return ok;
  };
  optional_loss_hook(p->tcp_retransmit, "tcp_retransmit_skb", "retransmit events");
  optional_loss_hook(p->tcp_send_reset, "tcp_send_reset", "send_rst events");
  optional_loss_hook(p->tcp_receive_reset, "tcp_receive_reset", "recv_rst events");
  loss_state_hooked_ = optional_loss_hook(p->tcp_cong_state, "tcp_cong_state_set", "loss and recovery events");

  zero_window_hooked_ = loss && exists("timer_expire_entry") && exists("timer_expire_exit");
  bpf_program__set_autoload(p->tcp_timer_entry, zero_window_hooked_);
  bpf_program__set_autoload(p->tcp_timer_exit, zero_window_hooked_);
  if (loss && !zero_window_hooked_)
    spdlog::warn("tcp_loss: no tracepoints timer_expire_entry/exit in this kernel: zero_window not reported");

  auto* ro = skel_->rodata;
  ro->targ_connect = connect;
  ro->targ_accept = accept;
  ro->targ_loss = loss;
  ro->targ_retrans_err = bpf::btf_tracepoint_args("tcp_retransmit_skb") >= 3;
  ro->targ_rst_reason = bpf::btf_tracepoint_args("tcp_send_reset") >= 3;
  decoder_.emplace(ro->targ_rst_reason ? bpf::kernel_enum_names("sk_rst_reason", "SK_RST_REASON_")
                                       : std::vector<std::string>{});
}

void TcpTracker::start(TrackerContext& ctx) {
  open(ctx);
  const TcpOptions& o = options_;

  const bool host_scope = o.net_scope == "host";
  configure_hooks(host_scope);
  auto* ro = skel_->rodata;
  ro->targ_host_scope = host_scope;
  ro->targ_loss_rate = o.loss_rate_limit;
  if (!o.loss_filter_ip.empty()) {
    auto ip = tcp::parse_filter_ip(o.loss_filter_ip);
    if (!ip) throw Error("--loss-filter-ip: '" + o.loss_filter_ip + "' is not an IPv4 or IPv6 address");
    ro->filter_ip_set = true;
    std::memcpy(&ro->filter_ip[0], ip->data(), 8);  // compared with addresses copied the same way
    std::memcpy(&ro->filter_ip[1], ip->data() + 8, 8);
  }
  bpf_map__set_max_entries(skel_->maps.owners, ro->targ_host_scope ? kOwnersHost : kOwnersTargets);
  skel_.load(ctx.shared_maps);
  attach_all();
  add_targets();
  seed_existing_sockets(ctx.targets);
  read_events();
  spdlog::info("tcp: reporting {}", ro->targ_host_scope ? "every TCP socket on the host (--net-scope host)"
                                                        : "sockets of the target processes");
}

void TcpTracker::attach_all() {
  std::vector<std::string> attached;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    auto* p = &skel_->progs;
    if (!bpf_program__autoload(prog) || prog == p->seed_owners || prog == p->tcp_accept_enter ||
        prog == p->tcp_accept_return)
      continue;  // the iterator runs once; the uprobes go in each target (attach_process)
    std::string section = bpf_program__section_name(prog);
    bpf_link* link = bpf_program__attach(prog);
    if (!link) throw Error(errno_text("tcp: attach " + section, errno));
    links_.emplace_back(link);
    attached.push_back(section);
  }
  spdlog::info("tcp: attached {}", fmt::join(attached, ", "));
}

void TcpTracker::add_target(const Target& target) {
  if (!features_.accept || options_.net_scope == "host") return;
  try {
    attach_process(target.pid);
  } catch (const Error& e) {
    ctx_->degraded.add("tcp_accept", target.pid, target.python->name() + ": " + e.what(), e.hint());
  }
}

void TcpTracker::remove_target(pid_t pid) {
  bpf::detach_later(process_links_, pid);
}

void TcpTracker::attach_process(pid_t pid) {
  auto* p = &skel_->progs;
  const std::vector<bpf::LibcProbe> probes = {
      {"accept4", p->tcp_accept_enter, false, 0, {.args_read = 1}},  // the listening fd
      {"accept4", p->tcp_accept_return, true},
      {"accept", p->tcp_accept_enter, false, 0, {.args_read = 1}},
      {"accept", p->tcp_accept_return, true},
  };
  process_links_[pid] = bpf::attach_libc_probes(pid, probes, "tcp_accept");
}

// Hooks are attached first, so a socket created from now on gets its owner
// in BPF; then the sockets that already existed are matched by inode.
void TcpTracker::seed_existing_sockets(const TargetLookup& targets) {
  std::map<std::uint64_t, Fd> netns;  // namespaces holding target sockets, by inode
  std::size_t candidates = 0;
  for (const auto& t : targets.all()) {
    if (t.exited) continue;
    pyebpf_tcp_owner owner{};
    owner.hdr.ts_ns = monotonic_ns();
    owner.hdr.pid = static_cast<__u32>(t.pid);
    owner.hdr.ns_pid = container_pid_of(t.pid);
    std::strncpy(owner.hdr.comm, t.comm.c_str(), sizeof(owner.hdr.comm) - 1);
    for (auto& s : tcp::existing_tcp_sockets(t.pid, t.pidfd.get())) {
      __u64 inode = s.inode;
      if (bpf_map_update_elem(bpf_map__fd(skel_->maps.seed_inodes), &inode, &owner, BPF_ANY)) continue;
      ++candidates;
      if (!netns.count(s.netns_inode)) netns.emplace(s.netns_inode, std::move(s.netns));
    }
  }
  if (!candidates) return;
  bpf::Link iter(bpf_program__attach_iter(skel_->progs.seed_owners, nullptr));
  if (!iter) throw Error(errno_text("tcp: attach iter/tcp", errno));
  for (const auto& [inode, ns] : netns) {
    tcp::in_netns(ns.get(), [&] {
      Fd it(bpf_iter_create(iter.fd()));
      if (!it) throw Error(errno_text("tcp: create TCP socket iterator", errno));
      char buf[256];
      while (read(it.get(), buf, sizeof(buf)) > 0) {
      }
    });
  }
  spdlog::info(
      "tcp: {} of {} TCP sockets the targets held before tracing attributed to them (tid 0: thread unknown), "
      "in {} network namespace(s)",
      counters()[PYEBPF_TCP_CNT_SEEDED], candidates, netns.size());
}

void TcpTracker::handle(const void* data, std::size_t size) {
  const sinks::Record* record = nullptr;
  const Decoded decoded = decoder_->decode(data, size, decode_context(*ctx_), record);
  if (decoded == Decoded::Malformed) ++counts_.malformed;
  if (decoded != Decoded::Event) return;
  // What each part's summary line counts.
  const sinks::TableSchema* schema = &record->schema();
  if (schema == &tcp_connect_schema()) {
    ++connect_outcomes_[std::string(record->text(tcp_connect_schema().outcome))];
  } else if (schema == &tcp_accept_schema()) {
    ++accepts_;
    const auto dwell = tcp_accept_schema().accept_dwell_us;
    if (record->has(dwell)) max_dwell_us_ = std::max(max_dwell_us_, record->uint_value(dwell));
  } else {
    const TcpLossSchema& l = tcp_loss_schema();
    ++losses_[std::string(record->text(l.event))];
    if (!record->bool_value(l.owner_known)) ++unowned_losses_;
  }
  deliver(decoded, *record);
}

void TcpTracker::tick() {
  consume();
  if (!features_.loss) return;
  const std::uint64_t now = monotonic_ns();
  if (now - last_warning_ns_ < kWarnEveryNs) return;
  const Counters c = counters();
  std::uint64_t suppressed = 0;
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) suppressed += c[PYEBPF_TCP_CNT_SUPPRESSED + t];
  if (suppressed > warned_suppressed_) {
    spdlog::warn("tcp_loss: rate limit of {} events/s reached: {} events suppressed (counted in the summary)",
                 options_.loss_rate_limit, suppressed - warned_suppressed_);
    warned_suppressed_ = suppressed;
    last_warning_ns_ = now;
  }
}

Counters TcpTracker::counters() const {
  if (!skel_) return Counters{};
  return read_counters(skel_->maps.counters);
}

std::vector<std::string> TcpTracker::summary() const {
  const Counters c = counters();
  std::vector<std::string> lines;
  if (features_.connect) lines.push_back(connect_summary(c));
  if (features_.accept) lines.push_back(accept_summary(c));
  if (features_.loss) lines.push_back(loss_summary(c));
  if (counts_.malformed && !lines.empty()) lines.back() += malformed_note(counts_.malformed);
  return lines;
}

std::string TcpTracker::connect_summary(const Counters& c) const {
  std::vector<std::string> by_outcome;
  std::uint64_t n = 0;
  for (const auto& [outcome, count] : connect_outcomes_) {
    by_outcome.push_back(fmt::format("{} {}", count, outcome));
    n += count;
  }
  return fmt::format("tcp_connect: {} handshakes reported ({}), {} lost (ring buffer full){}", n,
                     by_outcome.empty() ? "none" : fmt::format("{}", fmt::join(by_outcome, ", ")),
                     c[PYEBPF_TCP_CNT_LOST_CONNECT], state_hooks_skipped_note());
}

std::string TcpTracker::accept_summary(const Counters& c) const {
  return fmt::format(
      "tcp_accept: {} connections accepted, longest accept-queue wait {:.3f} ms, {} without handshake data "
      "(established before tracing, or a skipped hook run), {} lost (ring buffer full){}",
      accepts_, static_cast<double>(max_dwell_us_) / 1000.0, c[PYEBPF_TCP_CNT_ACCEPT_NO_HANDSHAKE],
      c[PYEBPF_TCP_CNT_LOST_ACCEPT], state_hooks_skipped_note());
}

// A socket state change nested in a run of the same hook on one CPU (an
// interrupt's softirq during a run for a connect() or close()) is never seen:
// a connect or handshake then misses its start or end. Under connection churn
// (4 processes, ~50,000 connections/s here) ~100 runs a second were skipped.
std::string TcpTracker::state_hooks_skipped_note() const {
  if (!skel_) return "";
  const std::uint64_t skipped = recursion_misses(skel_->progs.tcp_state_change);
  return skipped ? fmt::format(", {} socket state changes skipped by the kernel's recursion guard", skipped) : "";
}

std::string TcpTracker::loss_summary(const Counters& c) const {
  std::vector<std::string> kinds, suppressed;
  std::uint64_t total = 0, total_suppressed = 0;
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) {
    auto it = losses_.find(tcp::loss_event_name(t));
    const std::uint64_t n = it == losses_.end() ? 0 : it->second;
    total += n;
    if (n) kinds.push_back(fmt::format("{} {}", n, tcp::loss_event_name(t)));
    std::uint64_t s = c[PYEBPF_TCP_CNT_SUPPRESSED + t];
    total_suppressed += s;
    if (s) suppressed.push_back(fmt::format("{} {}", s, tcp::loss_event_name(t)));
  }
  std::string out = fmt::format("tcp_loss: {} events ({})", total,
                                kinds.empty() ? "none" : fmt::format("{}", fmt::join(kinds, ", ")));
  out += fmt::format(", {} suppressed by --loss-rate-limit{}", total_suppressed,
                     suppressed.empty() ? "" : fmt::format(" ({})", fmt::join(suppressed, ", ")));
  if (c[PYEBPF_TCP_CNT_LOSS_FILTERED])
    out += fmt::format(", {} not matching --loss-filter-ip", c[PYEBPF_TCP_CNT_LOSS_FILTERED]);
  if (unowned_losses_) out += fmt::format(", {} on sockets with no known owner", unowned_losses_);
  if (c[PYEBPF_TCP_CNT_RETRANS_FAILED])
    out += fmt::format(", {} retransmitted segments not sent (local error)", c[PYEBPF_TCP_CNT_RETRANS_FAILED]);
  out += fmt::format(", {} lost (ring buffer full)", c[PYEBPF_TCP_CNT_LOST_LOSS]);
  // Found in the sockets' own counters: retransmits whose tracepoint ran no hook.
  out += fmt::format(", {} retransmitted segments the kernel did not report to BPF", c[PYEBPF_TCP_CNT_RETRANS_UNSEEN]);
  if (zero_window_hooked_) {
    out += fmt::format(", {} zero-window probes no timer hook saw sent", c[PYEBPF_TCP_CNT_PROBES_UNSEEN]);
    out += fmt::format(", {} probe timer runs left to the socket's owner (a probe each at most, unseen)",
                       c[PYEBPF_TCP_CNT_PROBES_DEFERRED]);
  }
  // E.g. a softirq retransmitting on one flow while the hook runs for
  // another on the same CPU: the kernel skips the nested run.
  std::uint64_t skipped = 0;
  if (skel_) {
    const auto& p = skel_->progs;
    for (const bpf_program* prog : {p.tcp_retransmit, p.tcp_retransmit_synack, p.tcp_send_reset, p.tcp_receive_reset,
                                    p.tcp_cong_state, p.tcp_timer_entry, p.tcp_timer_exit})
      skipped += recursion_misses(prog);
  }
  out += fmt::format(", {} hook runs skipped by the kernel's recursion guard", skipped);
  if (c[PYEBPF_TCP_CNT_OWNERS_FULL])
    out += fmt::format(", {} sockets not attributed (owner map full)", c[PYEBPF_TCP_CNT_OWNERS_FULL]);
  if (!zero_window_hooked_) out += "; zero_window not hooked";
  if (!loss_state_hooked_) out += "; loss/recovery not hooked";
  return out;
}

const TrackerDescriptor& tcp_tracker() {
  static const TrackerDescriptor d{
      .name = "tcp",
      .help = "TCP connections of the targets",
      .features = {{"tcp_connect", "outbound TCP handshakes", {}},
                   {"tcp_accept", "inbound TCP connections and accept-queue dwell", {}},
                   {"tcp_handshake", "tcp_connect + tcp_accept", {"tcp_connect", "tcp_accept"}},
                   {"tcp_loss", "retransmits, resets, zero windows", {}}},
      .schemas = {&tcp_connect_schema(), &tcp_accept_schema(), &tcp_loss_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<TcpOptions>();
        cli.add_option_group("tcp", "tcp_connect, tcp_accept, tcp_loss")
            ->add_option("--net-scope", o->net_scope,
                         "Sockets reported: 'targets' (those the target processes connected, accepted or listen on; "
                         "default) or 'host' (every TCP socket; with tcp_accept this hooks sys_exit, which makes "
                         "every system call on the host slower: +16 % for a 1-byte write(2) here)")
            ->check(CLI::IsMember({"targets", "host"}));
        auto* loss = cli.add_option_group("tcp_loss", "TCP retransmits, resets, zero windows");
        loss->add_option("--loss-filter-ip", o->loss_filter_ip,
                         "Only report events with this IPv4/IPv6 address at either end")
            ->check([](const std::string& ip) {
              return tcp::parse_filter_ip(ip) ? std::string() : "not an IPv4 or IPv6 address: " + ip;
            });
        flags::check(
            loss->add_option(
                "--loss-rate-limit", o->loss_rate_limit,
                "Most tcp_loss events per second; the rest are counted, not printed (default 1000, 0: no limit)"),
            flags::whole(0, 4e9, "events per second", "1000"));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>& features) -> std::unique_ptr<Tracker> {
        auto on = [&](const char* name) { return std::find(features.begin(), features.end(), name) != features.end(); };
        return std::make_unique<TcpTracker>(static_cast<const TcpOptions&>(*o),
                                            TcpFeatures{on("tcp_connect"), on("tcp_accept"), on("tcp_loss")});
      },
      .report = make_tcp_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
