// SPDX-License-Identifier: Apache-2.0
#include "trackers/host_net_health/host_net_health.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>

#include "net/ethtool.hpp"
#include "pyebpf/error.hpp"
#include "trackers/host_net_health/host_net_health_events.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/flag_rules.hpp"

namespace pyebpf::trackers {
namespace {

constexpr std::size_t kMaxProcessesListed = 32;  // per name, worst first

std::optional<std::uint64_t> inode_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st)) return std::nullopt;
  return st.st_ino;
}

std::int64_t read_int(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return -1;
  try {
    return std::stoll(*text);
  } catch (const std::exception&) {
    return -1;
  }
}

std::vector<std::string> split_names(const std::string& csv) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= csv.size()) {
    auto comma = csv.find(',', start);
    std::string name = csv.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::uint64_t count_fds(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(path.c_str());
  if (!dir) return 0;
  std::uint64_t n = 0;
  while (dirent* d = readdir(dir)) n += d->d_name[0] != '.';
  closedir(dir);
  return n;
}

struct FoundProcess {
  std::uint64_t netns = 0;
  hnh::ProcessFds fds;
};

// Processes whose comm is one of `names` (compared on the kernel's 15
// characters, like the original tool), by name.
std::map<std::string, std::vector<FoundProcess>> scan_processes(const std::vector<std::string>& names) {
  std::map<std::string, std::vector<FoundProcess>> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* d = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(d->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    std::string comm = read_comm(static_cast<pid_t>(pid), static_cast<pid_t>(pid));
    for (const auto& name : names) {
      if (comm.empty() || comm != name.substr(0, 15)) continue;
      std::string base = "/proc/" + std::to_string(pid);
      FoundProcess p;
      p.netns = inode_of(base + "/ns/net").value_or(0);
      p.fds.pid = static_cast<pid_t>(pid);
      p.fds.fd_count = count_fds(static_cast<pid_t>(pid));
      p.fds.fd_limit = net::parse_max_open_files(read_text_file(base + "/limits").value_or(""));
      out[name].push_back(p);
    }
  }
  closedir(proc);
  return out;
}

std::int64_t as_signed(std::uint64_t v) {
  return static_cast<std::int64_t>(v);
}

using Json = nlohmann::ordered_json;

// A snapshot's sockets by state, TIME_WAIT by destination, ephemeral ports.
void set_connections(sinks::Record& e, const hnh::Figures& f, std::size_t ephemeral_ports) {
  const HostNetHealthSchema& s = host_net_health_schema();
  const auto& c = f.conns;
  e.set_integer(s.established_inbound, c.established_inbound);
  e.set_integer(s.established_outbound, c.established_outbound);
  e.set_integer(s.time_wait, c.time_wait);
  e.set_integer(s.close_wait, c.close_wait);
  e.set_integer(s.syn_sent, c.syn_sent);
  e.set_integer(s.syn_recv, c.syn_recv);
  e.set_integer(s.fin_wait, c.fin_wait);
  e.set_integer(s.last_ack, c.last_ack);
  e.set_integer(s.closing, c.closing);
  e.set_integer(s.listen, c.listen);
  e.set_integer(s.sockets, c.total);
  e.set_integer(s.max_time_wait_one_dst, c.max_time_wait_one_dst);
  Json top = Json::array();
  for (const auto& d : c.time_wait_top) top.push_back({{"dst", d.dst}, {"count", d.count}});
  e.set_json(s.time_wait_top_dst, std::move(top));
  e.set_float(s.port_util_pct, f.port_util_pct);
  e.set_text(s.port_util_dst, c.max_ephemeral_dst);
  e.set_integer(s.ephemeral_ports, ephemeral_ports);
}

// ENA allowance counters and the interface's (/proc/net/dev): totals and
// their change over the window; -1 where the interface is unknown or changed.
void set_traffic(sinks::Record& e, const hnh::Figures& f, const HostNetHealthTracker::Reading& r,
                 const std::optional<net::InterfaceCounters>& prev, bool same_iface) {
  const HostNetHealthSchema& s = host_net_health_schema();
  e.set_int(s.delta_bw_in, f.ena_delta.bw_in);
  e.set_int(s.delta_bw_out, f.ena_delta.bw_out);
  e.set_int(s.delta_pps, f.ena_delta.pps);
  e.set_int(s.delta_conntrack, f.ena_delta.conntrack);
  e.set_int(s.delta_linklocal, f.ena_delta.linklocal);
  e.set_int(s.conntrack_available, r.ena.conntrack_available);
  e.set_int(s.total_bw_in, r.ena.bw_in);
  e.set_int(s.total_bw_out, r.ena.bw_out);
  e.set_int(s.total_pps, r.ena.pps);
  using IC = net::InterfaceCounters;
  struct Counter {
    sinks::FieldId total, delta;
    std::uint64_t IC::*member;
  };
  const Counter counters[] = {
      {s.rx_bytes, s.delta_rx_bytes, &IC::rx_bytes},       {s.tx_bytes, s.delta_tx_bytes, &IC::tx_bytes},
      {s.rx_packets, s.delta_rx_packets, &IC::rx_packets}, {s.tx_packets, s.delta_tx_packets, &IC::tx_packets},
      {s.rx_errors, s.delta_rx_errors, &IC::rx_errors},    {s.tx_errors, s.delta_tx_errors, &IC::tx_errors},
      {s.rx_dropped, s.delta_rx_dropped, &IC::rx_dropped}, {s.tx_dropped, s.delta_tx_dropped, &IC::tx_dropped},
  };
  for (const auto& k : counters) {
    e.set_int(k.total, r.counters ? as_signed((*r.counters).*k.member) : -1);
    bool ok = r.counters && prev && same_iface && (*r.counters).*k.member >= (*prev).*k.member;
    e.set_int(k.delta, ok ? as_signed((*r.counters).*k.member - (*prev).*k.member) : -1);
  }
  e.set_int(s.conntrack_count, r.conntrack_count);
  e.set_int(s.conntrack_max, r.conntrack_max);
}

// Per watched process name: its processes' fds against their limits, the
// worst first; and the worst utilisation of all.
void set_fd_usage(sinks::Record& e, const std::vector<hnh::FdUsage>& fds) {
  const HostNetHealthSchema& s = host_net_health_schema();
  Json fd_usage = Json::array();
  double fd_max = 0;
  for (const auto& u : fds) {
    Json item;
    item["proc"] = u.proc;
    item["pids"] = u.processes.size();
    item["fd_count"] = u.fd_count_total;
    item["fd_limit"] = u.min_limit;
    item["fd_util_pct"] = u.max_util_pct;  // the worst process's own utilisation
    item["max_pid"] = u.max_pid;
    Json list = Json::array();
    for (std::size_t i = 0; i < u.processes.size() && i < kMaxProcessesListed; ++i) {
      const auto& p = u.processes[i];
      list.push_back({{"pid", p.pid}, {"fd_count", p.fd_count}, {"fd_limit", p.fd_limit}, {"fd_util_pct", p.util_pct}});
    }
    item["processes"] = list;
    fd_usage.push_back(item);
    fd_max = std::max(fd_max, u.max_util_pct);
  }
  e.set_json(s.fd_usage, std::move(fd_usage));
  e.set_float(s.fd_util_max_pct, fd_max);
}

}  // namespace

HostNetHealthTracker::HostNetHealthTracker(const HostNetHealthOptions& options)
    : options_(options), record_(host_net_health_schema()) {}
HostNetHealthTracker::~HostNetHealthTracker() {
  if (pending_.valid()) pending_.wait();
}

void HostNetHealthTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  const HostNetHealthOptions& o = options_;
  procs_ = split_names(o.procs);

  auto open_ns = [](const std::string& path) {
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(errno_text("host_net_health: open " + path, errno), "use --hnh-netns self");
    struct stat st {};
    fstat(fd.get(), &st);
    return std::make_pair(std::move(fd), static_cast<std::uint64_t>(st.st_ino));
  };
  if (o.netns == "self") {
    auto [fd, ino] = open_ns("/proc/self/ns/net");
    View v;
    v.netns = ino;
    v.nsfd = std::move(fd);
    v.label_pid = getpid();
    views_.push_back(std::move(v));
  } else {
    for (const auto& t : ctx.targets.all()) {
      auto [fd, ino] = open_ns("/proc/" + std::to_string(t.pid) + "/ns/net");
      // Captured by copy: clang 14 (the sanitizer build) cannot capture structured bindings by reference.
      auto it = std::find_if(views_.begin(), views_.end(), [ino = ino](const View& v) { return v.netns == ino; });
      if (it == views_.end()) {
        View v;
        v.netns = ino;
        v.nsfd = std::move(fd);
        v.label_pid = t.pid;
        views_.push_back(std::move(v));
        it = views_.end() - 1;
      }
      it->pids.push_back(t.pid);
    }
  }

  // Baseline for the first snapshot's deltas; the snapshot itself follows at
  // the first tick.
  Round baseline = std::async(std::launch::async, [this] { return collect(true); }).get();
  for (std::size_t i = 0; i < views_.size(); ++i) {
    const Reading& r = baseline.readings[i];
    View& v = views_[i];
    if (!r.error.empty()) throw Error("host_net_health: " + r.error, "use --hnh-netns self");
    v.prev_ts_ns = r.ts_ns;
    v.prev_interface = r.interface;
    v.prev_counters = r.counters;
    v.prev_ena = r.ena;
    spdlog::info("host_net_health: netns {} ({}): interface {} (driver {}{}), every {} s", v.netns,
                 v.pids.empty() ? "pyebpf's own" : "pid " + std::to_string(v.label_pid),
                 r.interface.empty() ? "none" : r.interface, r.driver.value_or("none"),
                 r.ena.available ? ", ENA allowance counters" : "", o.interval_s);
  }
  next_due_ns_ = monotonic_ns();
}

HostNetHealthTracker::Round HostNetHealthTracker::collect(bool counters_only) const {
  Round round;
  std::map<std::string, std::vector<FoundProcess>> found;
  if (!counters_only) found = scan_processes(procs_);
  const bool self_mode = options_.netns == "self";
  for (const auto& view : views_) {
    Reading r;
    // This thread only (a helper thread): the runner's thread keeps its namespace.
    if (setns(view.nsfd.get(), CLONE_NEWNET)) {
      r.error = errno_text("setns into network namespace " + std::to_string(view.netns), errno);
      round.readings.push_back(std::move(r));
      continue;
    }
    r.ts_ns = monotonic_ns();
    auto dev = net::parse_net_dev(read_text_file("/proc/thread-self/net/dev").value_or(""));
    r.interface = options_.interface;
    if (r.interface.empty())
      r.interface = net::default_route_interface(read_text_file("/proc/thread-self/net/route").value_or(""),
                                                 read_text_file("/proc/thread-self/net/ipv6_route").value_or(""))
                        .value_or("");
    if (auto it = dev.find(r.interface); it != dev.end()) r.counters = it->second;
    if (!r.interface.empty()) {
      r.driver = net::ethtool_driver(r.interface);
      r.ena = hnh::ena_counters(net::ethtool_stats(r.interface));
    }
    if (!counters_only) {
      r.ports = net::parse_port_range(read_text_file("/proc/sys/net/ipv4/ip_local_port_range").value_or(""));
      try {
        r.sockets = net::dump_tcp_sockets();
      } catch (const Error& e) {
        r.error = e.what();
      }
      r.conntrack_count = read_int("/proc/sys/net/netfilter/nf_conntrack_count");
      r.conntrack_max = read_int("/proc/sys/net/netfilter/nf_conntrack_max");
      for (const auto& name : procs_) {
        std::vector<hnh::ProcessFds> mine;
        for (const auto& p : found[name]) {
          if (self_mode || p.netns == view.netns) mine.push_back(p.fds);
        }
        r.fds.push_back(hnh::fd_usage_of(name, std::move(mine)));
      }
    }
    round.readings.push_back(std::move(r));
  }
  return round;
}

bool HostNetHealthTracker::view_alive(const View& v) const {
  if (v.pids.empty()) return true;
  for (const auto& t : ctx_->targets.all()) {
    if (!t.exited && std::find(v.pids.begin(), v.pids.end(), t.pid) != v.pids.end()) return true;
  }
  return false;
}

void HostNetHealthTracker::emit(View& v, const Reading& r) {
  if (!r.error.empty()) {
    ++failures_;
    if (!v.warned) spdlog::warn("host_net_health: netns {}: {}", v.netns, r.error);
    v.warned = true;
    return;
  }
  const HostNetHealthOptions& o = options_;
  hnh::Figures f;
  f.conns = hnh::summarize_connections(r.sockets, r.ports);
  f.port_util_pct = hnh::port_util_pct(f.conns, r.ports);
  f.fds = r.fds;
  const bool same_iface = r.interface == v.prev_interface;
  f.ena_delta = same_iface ? hnh::ena_deltas(r.ena, v.prev_ena) : hnh::ena_deltas(r.ena, hnh::EnaCounters{});
  f.conntrack_count = r.conntrack_count;
  f.conntrack_max = r.conntrack_max;

  const HostNetHealthSchema& s = host_net_health_schema();
  sinks::Record& e = record_;
  const std::int64_t us = ctx_->clock.epoch_us(r.ts_ns);
  e.clear();
  e.set_text(sinks::host_fields::env, ctx_->env);
  e.set_time(sinks::host_fields::ts, us);
  e.set_int(sinks::host_fields::ts_us, us);
  e.set_uint(s.netns, v.netns);
  e.set_text(s.netns_of, v.pids.empty() ? "self" : "target");
  e.set_integer(s.pid, v.label_pid);
  e.set_json(s.pids, Json(v.pids));
  e.set_text(s.interface, r.interface);
  e.set_text(s.driver, r.driver.value_or(""));
  e.set_uint(s.interval_s, o.interval_s);
  e.set_float(s.window_s, round_ms(static_cast<double>(r.ts_ns - v.prev_ts_ns) / 1e9));
  set_connections(e, f, r.ports.size());
  set_traffic(e, f, r, v.prev_counters, same_iface);
  set_fd_usage(e, f.fds);
  e.set_texts(s.warnings, hnh::warnings(f, options_.thresholds));
  ctx_->sink.write(e);
  ++snapshots_;

  v.prev_ts_ns = r.ts_ns;
  v.prev_interface = r.interface;
  v.prev_counters = r.counters;
  v.prev_ena = r.ena;
}

void HostNetHealthTracker::tick() {
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Round round = pending_.get();
    for (std::size_t i = 0; i < views_.size() && i < round.readings.size(); ++i) {
      if (view_alive(views_[i])) emit(views_[i], round.readings[i]);
    }
  }
  std::uint64_t now = monotonic_ns();
  if (pending_.valid() || now < next_due_ns_) return;
  const std::uint64_t interval = static_cast<std::uint64_t>(options_.interval_s) * 1'000'000'000ULL;
  next_due_ns_ += interval;
  if (next_due_ns_ <= now) next_due_ns_ = now + interval;
  pending_ = std::async(std::launch::async, [this] { return collect(false); });
}

std::string HostNetHealthTracker::summary_line() const {
  return fmt::format("host_net_health: {} snapshots of {} network namespace(s), {} failed", snapshots_, views_.size(),
                     failures_);
}

const TrackerDescriptor& host_net_health_tracker() {
  static const TrackerDescriptor d{
      .name = "host_net_health",
      .help = "periodic host network health snapshot",
      .schemas = {&host_net_health_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<HostNetHealthOptions>();
        hnh::Thresholds& t = o->thresholds;
        auto* hnh = cli.add_option_group("host_net_health", "Periodic network health snapshot");
        flags::check(hnh->add_option("--hnh-interval", o->interval_s,
                                     "Seconds between snapshots (default 30; the first comes at start)"),
                     flags::whole(1, 86400, "seconds", "30"));
        hnh->add_option("--hnh-interface", o->interface, "Interface to report (default: the default route's)");
        hnh->add_option("--hnh-procs", o->procs,
                        "Comma-separated process names whose fd usage to report (default nginx,gunicorn)");
        hnh->add_option(
               "--hnh-netns", o->netns,
               "Network namespace: 'target' (each target's, one snapshot per namespace; default) or 'self' (pyebpf's)")
            ->check(CLI::IsMember({"target", "self"}));
        const auto sockets = flags::whole(0, 0, "sockets", "100");
        const auto percent = flags::between(0, 100, "%", "80");
        flags::check(
            hnh->add_option("--hnh-warn-close-wait", t.close_wait, "Warn above this many CLOSE_WAIT sockets (100)"),
            sockets);
        flags::check(hnh->add_option("--hnh-warn-time-wait", t.time_wait_one_dst,
                                     "Warn above this many TIME_WAIT sockets to one destination (15000)"),
                     sockets);
        flags::check(hnh->add_option("--hnh-warn-port-util", t.port_util_pct,
                                     "Warn above this % of the ephemeral port range used towards one destination (60)"),
                     percent);
        flags::check(hnh->add_option("--hnh-warn-syn-sent", t.syn_sent, "Warn above this many SYN_SENT sockets (30)"),
                     sockets);
        flags::check(hnh->add_option("--hnh-warn-syn-recv", t.syn_recv, "Warn above this many SYN_RECV sockets (100)"),
                     sockets);
        flags::check(
            hnh->add_option("--hnh-warn-fd-util", t.fd_util_pct, "Warn above this % of a process's fd limit (80)"),
            percent);
        flags::check(
            hnh->add_option("--hnh-warn-conntrack", t.conntrack_pct, "Warn above this % of nf_conntrack_max (80)"),
            percent);
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<HostNetHealthTracker>(static_cast<const HostNetHealthOptions&>(*o));
      },
      .report = make_host_net_health_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
