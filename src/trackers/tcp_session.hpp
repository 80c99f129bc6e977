// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/handles.hpp"
#include "bpf/ring_buffer.hpp"
#include "bpf/skeleton.hpp"
#include "sinks/sink.hpp"
#include "tcp.h"
#include "trackers/bpf_counters.hpp"
#include "trackers/descriptor.hpp"
#include "trackers/tcp_events.hpp"

struct tcp_bpf;

namespace pyebpf::trackers {

// The flags tcp_connect, tcp_accept and tcp_loss share.
struct TcpOptions : TrackerOptions {
  std::string net_scope = "targets";  // "targets": sockets of the target processes; "host": all
  std::string loss_filter_ip;         // tcp_loss: only events with this address at either end
  unsigned loss_rate_limit = 1000;    // tcp_loss events per second (all CPUs), 0: unlimited
};
std::shared_ptr<TrackerOptions> add_tcp_options(CLI::App& cli);

// The one BPF object (bpf/tcp.bpf.c) behind tcp_connect, tcp_accept and
// tcp_loss. They share it because they share its socket -> owner map, and so
// the hooks run once whichever of them are enabled. Each tracker acquires the
// session in its constructor and says what it needs; the runner creates every
// tracker before starting any, so the first start() knows the full set and
// loads only the hooks that set needs. Events are dispatched to the handler
// of their kind.
class TcpSession {
 public:
  enum class Kind { Connect, Accept, Loss };

  // The session of this run, shared by the TCP trackers alive now.
  static std::shared_ptr<TcpSession> acquire();
  ~TcpSession();

  // Before start(): what a tracker needs and where its events go.
  void want(Kind kind);
  // Where records of `kind` go (the tracker's handler counts and writes them).
  void on_record(Kind kind, std::function<void(const sinks::Record&)> handler);

  // Loads and attaches on the first call; later calls do nothing.
  void start(TrackerContext& ctx, const TcpOptions& options);
  // The ring buffer's epoll fd for the first caller, nothing for the others
  // (one fd may join the runner's epoll set once).
  std::vector<int> claim_wait_fds();
  // Handles every event available now.
  void consume();

  Counters counters() const;
  std::uint64_t malformed() const { return malformed_; }
  bool zero_window_hooked() const { return zero_window_hooked_; }
  bool loss_state_hooked() const { return loss_state_hooked_; }
  // Target processes whose accept() could not be hooked (tcp_accept, see the warnings).
  std::uint64_t unhooked() const { return unhooked_; }

 private:
  TcpSession();
  void handle(const void* data, std::size_t size);
  void configure_hooks(bool connect, bool accept, bool loss, bool host_scope);
  void attach_all();
  // tcp_accept: uprobes on accept4/accept in one target process.
  void attach_process(pid_t pid);
  void seed_existing_sockets(const TargetLookup& targets);

  bool wanted_[3] = {false, false, false};
  std::function<void(const sinks::Record&)> handlers_[3];
  bpf::Skeleton<tcp_bpf> skel_;
  std::vector<bpf::Link> links_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;
  std::optional<bpf::RingBuffer> events_;
  std::optional<TcpDecoder> decoder_;
  bool started_ = false;
  bool fd_claimed_ = false;
  bool zero_window_hooked_ = false;
  bool loss_state_hooked_ = false;
  std::uint64_t malformed_ = 0;
  std::uint64_t unhooked_ = 0;
  TrackerContext* ctx_ = nullptr;
};

// What tcp_connect, tcp_accept and tcp_loss have in common: the session, and
// the runner-facing plumbing around it.
class TcpTrackerBase : public Tracker {
 public:
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override { return session_->claim_wait_fds(); }
  void consume() override { session_->consume(); }
  // Ring buffer wakeups are rate-limited in BPF (ringbuf.bpf.h): drain on the tick too.
  void tick() override { session_->consume(); }

 protected:
  TcpTrackerBase(TcpSession::Kind kind, const TcpOptions& options);
  // Counts the record for its target and writes it.
  void write(const sinks::Record& r);
  // A BPF counter of the session (enum pyebpf_tcp_counter or pyebpf_counter).
  std::uint64_t counter(int slot) const { return session_->counters()[static_cast<std::size_t>(slot)]; }

  const TcpOptions options_;
  std::shared_ptr<TcpSession> session_;
  TrackerContext* ctx_ = nullptr;
  EventCounts counts_;  // of this tracker's kind
};

}  // namespace pyebpf::trackers
