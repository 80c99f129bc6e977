// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// The runner starts each tracker on a thread of its own, but one at a time,
// except while the kernel verifies a BPF object and creates its maps: a
// thread holds a StartTurn for the whole of a tracker's start(), and
// Skeleton::load() gives the turn up (LoadWindow) for the load alone. The
// loads of several objects then overlap on the CPUs, while everything else
// start() touches (the targets' caches, ctx.degraded, the feature checks) is
// used by one thread at a time, as when trackers started in sequence. Inside
// the window, loads share only libbpf's feature cache (written with
// WRITE_ONCE, made for this) and the parsed vmlinux BTF (read-only to
// libbpf; features.cpp hands it out under a lock).
class StartTurn {
 public:
  StartTurn();
  ~StartTurn();
  StartTurn(const StartTurn&) = delete;
  StartTurn& operator=(const StartTurn&) = delete;
};

// Gives up this thread's StartTurn, if it holds one, until destroyed.
class LoadWindow {
 public:
  LoadWindow();
  ~LoadWindow();
  LoadWindow(const LoadWindow&) = delete;
  LoadWindow& operator=(const LoadWindow&) = delete;

 private:
  bool released_;
};

}  // namespace pyebpf::bpf
