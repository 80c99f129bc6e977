// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "python/memory.hpp"

namespace pyebpf::python {

// A live thread state of the target and the thread it belongs to.
struct ThreadStateRef {
  std::uint64_t tstate = 0;
  std::uint64_t thread_id = 0;  // pthread_t == the thread's TLS pointer
};

// Finds where, relative to a thread's TLS pointer, each thread keeps its own
// PyThreadState whether or not it holds the GIL (the "gilstate"), so BPF can
// read it in one step. Every candidate is checked against the live threads:
// each thread's slot must hold that thread's own state.
//
//  - 3.15+ keep it in the thread-local _Py_tss_gilstate: `gilstate_tls` is its
//    offset from the thread pointer, decoded from the interpreter's code
//    (decode_tls_load); only that offset is accepted.
//  - <= 3.14 keep it in the pthread TSD slot of autoTSSkey. Rather than
//    hard-coding a libc's struct pthread layout, each live thread's struct
//    pthread is searched for the address of that thread's own PyThreadState
//    and the offset every thread agrees on is kept; glibc puts it at
//    specific_1stblock[key].data, but musl or another libc version works the
//    same way.
// nullopt if no single offset fits all threads (BPF then walks the thread list).
std::optional<std::int32_t> find_thread_state_slot(const ProcessMemory& memory,
                                                   const std::vector<ThreadStateRef>& threads,
                                                   std::optional<std::int32_t> gilstate_tls);

// The offset from the thread pointer that a function reading one thread-local
// variable loads, from its machine code (x86-64, local-exec model, what a
// statically linked interpreter uses): [endbr64] mov %fs:OFFSET,%reg. nullopt
// for any other code (a pthread_getspecific call, a __tls_get_addr call in a
// shared libpython).
std::optional<std::int32_t> decode_tls_load(std::span<const std::uint8_t> code);

}  // namespace pyebpf::python
