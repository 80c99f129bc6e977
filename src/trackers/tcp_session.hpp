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
#include "sinks/sink.hpp"
#include "tcp.h"
#include "trackers/bpf_counters.hpp"
#include "trackers/tracker.hpp"

struct tcp_bpf;

namespace pyebpf::trackers {

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
  void on_connect(std::function<void(const pyebpf_tcp_connect_event&)> handler);
  void on_accept(std::function<void(const pyebpf_tcp_accept_event&)> handler);
  void on_loss(std::function<void(const pyebpf_tcp_loss_event&)> handler);

  // Loads and attaches on the first call; later calls do nothing.
  void start(TrackerContext& ctx);
  // The ring buffer's epoll fd for the first caller, nothing for the others
  // (one fd may join the runner's epoll set once).
  std::vector<int> claim_wait_fds();
  // Handles every event available now.
  void consume();

  Counters counters() const;
  std::uint64_t malformed() const { return malformed_; }
  // "TCP_ABORT_ON_CLOSE" for an enum sk_rst_reason value (from kernel BTF).
  std::string rst_reason_name(std::uint32_t reason) const;
  // thread_name for an event of the thread in `hdr`: the current Python name,
  // else the one read when the thread first owned a socket (it may be gone).
  std::string thread_name(const pyebpf_event_header& hdr, const std::string& current);
  bool zero_window_hooked() const { return zero_window_hooked_; }
  bool loss_state_hooked() const { return loss_state_hooked_; }
  // Target processes whose accept() could not be hooked (tcp_accept, see the warnings).
  std::uint64_t unhooked() const { return unhooked_; }

 private:
  TcpSession();
  void handle(const void* data, std::size_t size);
  void remember_thread(const pyebpf_event_header& hdr);
  void configure_hooks(bool connect, bool accept, bool loss, bool host_scope);
  void attach_all();
  // tcp_accept: uprobes on accept4/accept in one target process.
  void attach_process(pid_t pid);
  void seed_existing_sockets(app::Targets& targets);

  struct SkelDeleter {
    void operator()(tcp_bpf* skel) const noexcept;
  };
  bool wanted_[3] = {false, false, false};
  std::function<void(const pyebpf_tcp_connect_event&)> connect_handler_;
  std::function<void(const pyebpf_tcp_accept_event&)> accept_handler_;
  std::function<void(const pyebpf_tcp_loss_event&)> loss_handler_;
  std::unique_ptr<tcp_bpf, SkelDeleter> skel_;
  std::vector<bpf::Link> links_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;
  std::optional<bpf::RingBuffer> events_;
  std::vector<std::string> rst_reasons_;
  bool started_ = false;
  bool fd_claimed_ = false;
  bool zero_window_hooked_ = false;
  bool loss_state_hooked_ = false;
  std::uint64_t malformed_ = 0;
  std::uint64_t unhooked_ = 0;
  TrackerContext* ctx_ = nullptr;
  // (pid << 64 | thread pointer) would not fit a key: pid and ident hashed together.
  std::unordered_map<std::uint64_t, std::string> early_names_;
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
  explicit TcpTrackerBase(TcpSession::Kind kind);
  // `<prefix>_ip`, `<prefix>_port` for the local then the remote end, e.g. src/dst.
  static void add_endpoint(sinks::Event& e, const char* prefix, const std::uint8_t* addr, std::uint16_t port,
                           std::uint16_t family);
  // The event's common fields for the thread in `hdr`, counted for its target.
  sinks::Event begin_event(const char* metric, const pyebpf_event_header& hdr);
  // A BPF counter of the session (enum pyebpf_tcp_counter or pyebpf_counter).
  std::uint64_t counter(int slot) const { return session_->counters()[static_cast<std::size_t>(slot)]; }

  std::shared_ptr<TcpSession> session_;
  TrackerContext* ctx_ = nullptr;
};

}  // namespace pyebpf::trackers
