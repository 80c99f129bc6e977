// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstdint>
#include <mutex>

#include "pyebpf/fd.hpp"
#include "python.h"

namespace pyebpf::bpf {

// Maps every BPF object shares, created once here and handed to each
// skeleton with bpf_map__reuse_fd before load: the target processes
// (py_procs, with its counting filter py_proc_slots), the thread-state
// cache (py_tstates) and, made when the first object that declares it loads,
// the per-thread records of the context-switch hooks (thread_records,
// bpf/thread_record.bpf.h). One source of truth, so adding or dropping a
// target is one update, whatever trackers run. The first three take their
// types and sizes from bpf/python.h, which the BPF side declares them with;
// thread_records takes its value size from the first object that declares
// it. libbpf checks every reusing object's definition agrees.
class SharedMaps {
 public:
  SharedMaps();
  ~SharedMaps();
  SharedMaps(const SharedMaps&) = delete;
  SharedMaps& operator=(const SharedMaps&) = delete;

  // Call between a skeleton's open and load for each shared map it declares.
  void reuse_in(bpf_object* obj) const;

  // Counted in py_proc_slots as BPF's pyebpf_add_proc/pyebpf_remove_proc do.
  void add_process(pid_t pid, const pyebpf_py_proc& config) const;
  void remove_process(pid_t pid) const;

 private:
  std::uint32_t& slot(pid_t pid) const;
  int thread_records_fd(std::uint32_t value_size) const;

  Fd py_procs_;
  Fd py_proc_slots_;
  Fd py_tstates_;
  mutable std::mutex thread_records_mutex_;
  mutable Fd thread_records_;           // task storage needs BTF: made from the first declaring object's size
  pyebpf_proc_slots* slots_ = nullptr;  // py_proc_slots' value, mmap'd
};

}  // namespace pyebpf::bpf
