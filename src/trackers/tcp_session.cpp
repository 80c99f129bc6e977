// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_session.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "bpf/features.hpp"
#include "bpf/libc_probes.hpp"
#include "native/kallsyms.hpp"
#include "pyebpf/error.hpp"
#include "tcp.skel.h"
#include "trackers/event_fields.hpp"
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

void TcpSession::SkelDeleter::operator()(tcp_bpf* skel) const noexcept {
  tcp_bpf__destroy(skel);
}

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
void TcpSession::on_connect(std::function<void(const pyebpf_tcp_connect_event&)> h) {
  connect_handler_ = std::move(h);
}
void TcpSession::on_accept(std::function<void(const pyebpf_tcp_accept_event&)> h) {
  accept_handler_ = std::move(h);
}
void TcpSession::on_loss(std::function<void(const pyebpf_tcp_loss_event&)> h) {
  loss_handler_ = std::move(h);
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
  if (ro->targ_rst_reason) rst_reasons_ = bpf::kernel_enum_names("sk_rst_reason", "SK_RST_REASON_");
}

void TcpSession::start(TrackerContext& ctx) {
  if (started_) return;
  started_ = true;
  ctx_ = &ctx;
  const auto& o = ctx.options;
  const bool connect = wanted_[static_cast<int>(Kind::Connect)];
  const bool accept = wanted_[static_cast<int>(Kind::Accept)];
  const bool loss = wanted_[static_cast<int>(Kind::Loss)];

  skel_.reset(tcp_bpf__open());
  if (!skel_) throw Error(errno_text("tcp: open BPF object", errno));
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
  ctx.shared_maps.reuse_in(skel_->obj);
  if (int err = tcp_bpf__load(skel_.get()))
    throw Error(errno_text("tcp: load BPF object", -err), "run with -vv to see the verifier log");
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
void TcpSession::seed_existing_sockets(app::Targets& targets) {
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
  std::uint32_t kind = 0;
  if (size < sizeof(kind)) {
    ++malformed_;
    return;
  }
  std::memcpy(&kind, data, sizeof(kind));
  auto deliver = [&](auto& handler, auto event) {
    if (size != sizeof(event)) {
      ++malformed_;
      return;
    }
    std::memcpy(&event, data, sizeof(event));
    if (handler) handler(event);
  };
  switch (kind) {
    case PYEBPF_TCP_CONNECT:
      deliver(connect_handler_, pyebpf_tcp_connect_event{});
      break;
    case PYEBPF_TCP_ACCEPT:
      deliver(accept_handler_, pyebpf_tcp_accept_event{});
      break;
    case PYEBPF_TCP_LOSS:
      deliver(loss_handler_, pyebpf_tcp_loss_event{});
      break;
    case PYEBPF_TCP_THREAD: {
      pyebpf_tcp_thread_event ev{};
      if (size != sizeof(ev)) {
        ++malformed_;
        break;
      }
      std::memcpy(&ev, data, sizeof(ev));
      remember_thread(ev.hdr);
      break;
    }
    default:
      ++malformed_;
  }
}

namespace {

// The thread pointer alone is not a thread: glibc reuses it for the next one.
std::uint64_t thread_key(const pyebpf_event_header& hdr) {
  return hdr.thread_id ^ (static_cast<std::uint64_t>(hdr.pid) * 0x9e3779b97f4a7c15ULL) ^
         (static_cast<std::uint64_t>(hdr.tid) * 0xff51afd7ed558ccdULL);
}

}  // namespace

void TcpSession::remember_thread(const pyebpf_event_header& hdr) {
  std::string comm = comm_text(hdr.comm);
  std::string name = trackers::thread_name(*ctx_, hdr.pid, hdr.thread_id, hdr.ns_tid, comm);
  auto* python = ctx_->targets.python(static_cast<pid_t>(hdr.pid));
  if (name == comm && python) {
    // The name cache may have been refreshed a moment ago for another thread
    // (it throttles refreshes): this thread is alive now, read again.
    python->thread_names().refresh();
    name = python_thread_name(*ctx_, hdr.pid, hdr.thread_id, hdr.ns_tid).value_or(comm);
  }
  spdlog::debug("tcp: thread {} of pid {} ({}) owns its first socket: name '{}'", hdr.tid, hdr.pid, comm, name);
  if (early_names_.size() > 65536) early_names_.clear();
  if (name != comm)
    early_names_[thread_key(hdr)] = name;
  else
    early_names_.erase(thread_key(hdr));
}

std::string TcpSession::thread_name(const pyebpf_event_header& hdr, const std::string& current) {
  if (current != comm_text(hdr.comm)) return current;
  auto it = early_names_.find(thread_key(hdr));
  return it == early_names_.end() ? current : it->second;
}

Counters TcpSession::counters() const {
  if (!skel_) return Counters{};
  return read_counters(skel_->maps.counters);
}

std::string TcpSession::rst_reason_name(std::uint32_t reason) const {
  if (reason < rst_reasons_.size() && !rst_reasons_[reason].empty()) return rst_reasons_[reason];
  return std::to_string(reason);
}

TcpTrackerBase::TcpTrackerBase(TcpSession::Kind kind) : session_(TcpSession::acquire()) {
  session_->want(kind);
}

void TcpTrackerBase::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  session_->start(ctx);
}

void TcpTrackerBase::add_endpoint(sinks::Event& e, const char* prefix, const std::uint8_t* addr, std::uint16_t port,
                                  std::uint16_t family) {
  e[std::string(prefix) + "_ip"] = tcp::format_ip(addr, family);
  e[std::string(prefix) + "_port"] = port;
}

sinks::Event TcpTrackerBase::begin_event(const char* metric, const pyebpf_event_header& hdr) {
  if (hdr.pid) ctx_->targets.count_event(static_cast<pid_t>(hdr.pid));
  sinks::Event e = thread_event(metric, *ctx_, hdr);
  // tid 0: a socket the process held before tracing started; no thread is known.
  e["thread_name"] = hdr.tid ? session_->thread_name(hdr, e["thread_name"].get<std::string>()) : "";
  return e;
}

}  // namespace pyebpf::trackers
