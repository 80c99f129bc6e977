// SPDX-License-Identifier: Apache-2.0
#include "trackers/common/event_fields.hpp"

#include <algorithm>
#include <cstring>

#include "python/unicode.hpp"

namespace pyebpf::trackers {

std::string thread_name(const DecodeContext& ctx, std::uint32_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                        std::string_view comm) {
  if (thread_ident) {
    if (auto name = ctx.targets.thread_name(static_cast<pid_t>(pid), thread_ident, ns_tid)) return *name;
  }
  return std::string(comm);
}

std::string comm_text(const char (&comm)[PYEBPF_COMM_LEN]) {
  return python::sanitize_utf8(std::string_view(comm, strnlen(comm, PYEBPF_COMM_LEN)));
}

void set_thread_fields(sinks::Record& r, const DecodeContext& ctx, const pyebpf_event_header& hdr) {
  namespace f = sinks::thread_fields;
  std::string comm = comm_text(hdr.comm);
  const std::int64_t us = ctx.clock.epoch_us(hdr.ts_ns);
  r.set_text(f::env, ctx.env);
  r.set_time(f::ts, us);
  r.set_int(f::ts_us, us);
  r.set_uint(f::pid, hdr.pid);
  r.set_uint(f::tid, hdr.tid);
  r.set_uint(f::container_pid, hdr.ns_pid);
  r.set_uint(f::container_tid, hdr.ns_tid);
  r.set_text(f::comm, comm);
  r.set_text(f::thread_name, thread_name(ctx, hdr.pid, hdr.thread_id, hdr.ns_tid, comm));
}

AddedPyStack add_python_stack(sinks::Record& r, const PyStackFields& f, python::FrameResolver& resolver,
                              const pyebpf_py_stack& stack, std::size_t bytes) {
  std::size_t available =
      bytes >= PYEBPF_STACK_BYTES(0) ? (bytes - PYEBPF_STACK_BYTES(0)) / sizeof(pyebpf_py_frame) : 0;
  AddedPyStack added;
  added.depth = std::min<std::size_t>({stack.depth, available, PYEBPF_MAX_FRAMES});
  added.partial = stack.status == PYEBPF_STACK_READ_FAULT || stack.status == PYEBPF_STACK_FRAME_LOOP;
  r.begin_py_stack(f.stack);
  for (std::size_t i = added.depth; i-- > 0;) {
    stack::PyFrame frame = resolver.resolve(stack.frames[i]);
    added.partial |= python::unresolved(frame);
    r.add_py_frame(frame);
  }
  r.set_uint(f.depth, added.depth);
  if (added.partial) r.set_bool(f.partial, true);
  return added;
}

}  // namespace pyebpf::trackers
