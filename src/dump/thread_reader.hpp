// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "bpf_runtime/handles.hpp"
#include "bpf_runtime/shared_maps.hpp"
#include "bpf_runtime/skeleton.hpp"
#include "thread_dump.h"

struct thread_dump_bpf;

namespace pyebpf::dump {

// The threads of every process in py_procs at one moment, as the sleepable
// task iterator of bpf/thread_dump.bpf.c reads them: state, time in it, the
// system call and its arguments, kernel and user stacks, Python stack. Reads
// without stopping anything; each read is a new pass of the iterator.
class ThreadReader {
 public:
  // Loads the iterator with the shared maps (py_procs tells it the targets).
  // Throws pyebpf::Error where the kernel cannot run it.
  explicit ThreadReader(const bpf::SharedMaps& shared);
  ~ThreadReader();
  ThreadReader(const ThreadReader&) = delete;
  ThreadReader& operator=(const ThreadReader&) = delete;

  // Every thread of the targets, or with `min_blocked_ns`, only those off
  // their CPU (sleeping, in uninterruptible wait...) at least that long.
  std::vector<pyebpf_thread_dump> read(std::uint64_t min_blocked_ns = 0);

 private:
  bpf::Skeleton<thread_dump_bpf> skel_;
  bpf::Link link_;
};

}  // namespace pyebpf::dump
