// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "python/memory.hpp"

namespace pyebpf::python {

// A live thread state of the target and the thread it belongs to.
struct ThreadStateRef {
  std::uint64_t tstate = 0;
  std::uint64_t thread_id = 0;  // pthread_t == the thread's TLS pointer
};

// Finds where, relative to a thread's TLS pointer, the C library keeps the
// pthread TSD slot CPython uses for the thread's bound PyThreadState
// (autoTSSkey). Rather than hard-coding a libc's struct pthread layout, it
// searches each live thread's struct pthread for the address of that thread's
// own PyThreadState and keeps the offset every thread agrees on; glibc puts
// it at specific_1stblock[key].data, but musl or another libc version works
// the same way. nullopt if no single offset fits all threads (BPF then walks
// the thread list instead).
std::optional<std::int32_t> find_thread_state_slot(const ProcessMemory& memory,
                                                   const std::vector<ThreadStateRef>& threads);

}  // namespace pyebpf::python
