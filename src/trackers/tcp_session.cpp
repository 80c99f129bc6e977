// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_session.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <map>

#include "bpf/features.hpp"
#include "bpf/libc_probes.hpp"
#include "native/kallsyms.hpp"
#include "pyebpf/error.hpp"
#include "tcp.skel.h"
#include "trackers/tcp_existing.hpp"
#include "trackers/tcp_format.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"

namespace pyebpf::trackers {
namespace {

constexpr std::uint32_t kOwnersTargets = 65536;
constexpr std::uint32_t kOwnersHost = 262144;

std::weak_ptr<TcpSession>& current_session() {
  static std::weak_ptr<TcpSession> session;
  return session;
}

}  // namespace

TcpSession::TcpSession() = default;
TcpSession::~TcpSession() = default;

std::shared_ptr<TcpSession> TcpSession::acquire() {
  auto& weak = current_session();
  if (auto existing = weak.lock()) return existing;
  std::shared_ptr<TcpSession> session(new TcpSession());
  weak = session;
  return session;
}

void TcpSession::want(Kind kind) {
  wanted_[static_cast<int>(kind)] = true;
}
void TcpSession::on_record(Kind kind, std::function<void(const sinks::Record&)> handler) {
  handlers_[static_cast<int>(kind)] = std::move(handler);
}

void TcpSession::configure_hooks(bool connect, bool accept, bool loss, bool host_scope) {
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

  std::uint64_t write_timer = loss ? native::Kallsyms::address_of("tcp_write_timer") : 0;
  zero_window_hooked_ = loss && write_timer && exists("timer_expire_entry") && exists("timer_expire_exit");
  bpf_program__set_autoload(p->tcp_timer_entry, zero_window_hooked_);
  bpf_program__set_autoload(p->tcp_timer_exit, zero_window_hooked_);
  if (loss && !zero_window_hooked_)
    spdlog::warn("tcp_loss: tcp_write_timer not found in /proc/kallsyms (kptr_restrict?): zero_window not reported");

  auto* ro = skel_->rodata;
  ro->targ_connect = connect;
  ro->targ_accept = accept;
  ro->targ_loss = loss;
  ro->targ_retrans_err = bpf::btf_tracepoint_args("tcp_retransmit_skb") >= 3;
  ro->targ_rst_reason = bpf::btf_tracepoint_args("tcp_send_reset") >= 3;
  ro->targ_tcp_write_timer = write_timer;
  decoder_.emplace(ro->targ_rst_reason ? bpf::kernel_enum_names("sk_rst_reason", "SK_RST_REASON_")
                                       : std::vector<std::string>{});
}

void TcpSession::start(TrackerContext& ctx, const TcpOptions& o) {
  if (started_) return;
  started_ = true;
  ctx_ = &ctx;
  const bool connect = wanted_[static_cast<int>(Kind::Connect)];
  const bool accept = wanted_[static_cast<int>(Kind::Accept)];
  const bool loss = wanted_[static_cast<int>(Kind::Loss)];

  skel_ = bpf::Skeleton<tcp_bpf>("tcp", {tcp_bpf__open, tcp_bpf__load, tcp_bpf__destroy});
  const bool host_scope = o.net_scope == "host";
  configure_hooks(connect, accept, loss, host_scope);
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
  if (accept && !host_scope) {
    for (const auto& t : ctx.targets.all()) {
      if (!t.exited) attach_process(t.pid);
    }
  }
  seed_existing_sockets(ctx.targets);
  events_.emplace(
      skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "tcp");
  spdlog::info("tcp: reporting {}", ro->targ_host_scope ? "every TCP socket on the host (--net-scope host)"
                                                        : "sockets of the target processes");
}

void TcpSession::attach_all() {
  std::string attached;
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
    attached += (attached.empty() ? "" : ", ") + section;
  }
  spdlog::info("tcp: attached {}", attached);
}

void TcpSession::attach_process(pid_t pid) {
  auto* p = &skel_->progs;
  const std::vector<bpf::LibcProbe> probes = {
      {"accept4", p->tcp_accept_enter},
      {"accept4", p->tcp_accept_return, true},
      {"accept", p->tcp_accept_enter},
      {"accept", p->tcp_accept_return, true},
  };
  if (auto links = bpf::attach_libc_probes(pid, probes, "tcp_accept", "its accepts are not reported"))
    process_links_[pid] = std::move(*links);
  else
    ++unhooked_;
}

// Hooks are attached first, so a socket created from now on gets its owner
// in BPF; then the sockets that already existed are matched by inode.
void TcpSession::seed_existing_sockets(const TargetLookup& targets) {
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
      Fd it(bpf_iter_create(bpf_link__fd(iter.get())));
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

std::vector<int> TcpSession::claim_wait_fds() {
  if (fd_claimed_ || !events_) return {};
  fd_claimed_ = true;
  return events_->wait_fds();
}

void TcpSession::consume() {
  if (events_) events_->consume();
}

void TcpSession::handle(const void* data, std::size_t size) {
  const sinks::Record* record = nullptr;
  switch (decoder_->decode(data, size, decode_context(*ctx_), record)) {
    case Decoded::Event: {
      const sinks::TableSchema* schema = &record->schema();
      Kind kind = schema == &tcp_connect_schema()  ? Kind::Connect
                  : schema == &tcp_accept_schema() ? Kind::Accept
                                                   : Kind::Loss;
      if (auto& handler = handlers_[static_cast<int>(kind)]) handler(*record);
      break;
    }
    case Decoded::Malformed:
      ++malformed_;
      break;
    case Decoded::Skipped:
      break;
  }
}

Counters TcpSession::counters() const {
  if (!skel_) return Counters{};
  return read_counters(skel_->maps.counters);
}

TcpTrackerBase::TcpTrackerBase(TcpSession::Kind kind, const TcpOptions& options)
    : options_(options), session_(TcpSession::acquire()) {
  session_->want(kind);
}

void TcpTrackerBase::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  session_->start(ctx, options_);
}

void TcpTrackerBase::write(const sinks::Record& r) {
  deliver(Decoded::Event, r, *ctx_, counts_);
}

std::shared_ptr<TrackerOptions> add_tcp_options(CLI::App& cli) {
  auto o = std::make_shared<TcpOptions>();
  cli.add_option_group("tcp", "tcp_connect, tcp_accept, tcp_loss")
      ->add_option("--net-scope", o->net_scope,
                   "Sockets reported: 'targets' (those the target processes connected, accepted or listen on; "
                   "default) or 'host' (every TCP socket; with tcp_accept this hooks sys_exit, which makes every "
                   "system call on the host slower: +16 % for a 1-byte write(2) here)")
      ->check(CLI::IsMember({"targets", "host"}));
  auto* loss = cli.add_option_group("tcp_loss", "TCP retransmits, resets, zero windows");
  loss->add_option("--loss-filter-ip", o->loss_filter_ip,
                   "Only report events with this IPv4/IPv6 address at either end")
      ->check([](const std::string& ip) {
        return tcp::parse_filter_ip(ip) ? std::string() : "not an IPv4 or IPv6 address: " + ip;
      });
  loss->add_option("--loss-rate-limit", o->loss_rate_limit,
                   "Most tcp_loss events per second; the rest are counted, not printed (default 1000, 0: no limit)");
  return o;
}

const TrackerDescriptor& tcp_handshake_alias() {
  static const TrackerDescriptor d{
      .name = "tcp_handshake", .help = "tcp_connect + tcp_accept", .expands_to = {"tcp_connect", "tcp_accept"}};
  return d;
}

}  // namespace pyebpf::trackers
