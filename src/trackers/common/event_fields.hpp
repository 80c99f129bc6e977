// SPDX-License-Identifier: Apache-2.0
// What decoders share: the fields every thread-level event starts with, and
// Python stacks from BPF records.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common.h"
#include "python.h"
#include "sinks/record.hpp"
#include "trackers/common/tracker.hpp"

namespace pyebpf::trackers {

// What a decoder names things with. Unlike TrackerContext it holds no BPF
// object, so decoders run in unit tests without root.
struct DecodeContext {
  const std::string& env;
  TargetLookup& targets;
  const WallClock& clock;
};

inline DecodeContext decode_context(const TrackerContext& ctx) {
  return {ctx.env, ctx.targets, ctx.clock};
}

// Sets the fields every thread-level event starts with (sinks::thread_fields):
// env, ts, ts_us, pid, tid, container_pid, container_tid, comm, thread_name.
// thread_name is the threading.Thread name when the thread has one, else the
// kernel thread name.
void set_thread_fields(sinks::Record& r, const DecodeContext& ctx, const pyebpf_event_header& hdr);

// A kernel thread name (task comm) from BPF, as valid UTF-8.
std::string comm_text(const char (&comm)[PYEBPF_COMM_LEN]);

// The threading name of (pid, thread ident, tid in the target's pid
// namespace), else `comm`.
std::string thread_name(const DecodeContext& ctx, std::uint32_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                        std::string_view comm);

struct AddedPyStack {
  std::size_t depth = 0;  // frames added; the leaf is the field's last frame
  // Not the whole true stack: a read fault or a looping chain cut the walk,
  // or a frame's code object could not be named (what a corrupted target
  // looks like). Such frames read "<unknown>", never garbage.
  bool partial = false;
};

// The fields one Python stack fills in a schema: its frames, how many there
// are, and whether they are partial (a Bool set only when true).
struct PyStackFields {
  sinks::FieldId stack, depth, partial;
};

// Adds the Python stack BPF recorded (leaf first) to `f.stack`, root first,
// naming each frame with `resolver`, and sets `f.depth` and `f.partial`.
// `bytes` is how much of `stack` arrived from BPF: frames beyond it are
// ignored even if the depth field claims more.
AddedPyStack add_python_stack(sinks::Record& r, const PyStackFields& f, python::FrameResolver& resolver,
                              const pyebpf_py_stack& stack, std::size_t bytes);

}  // namespace pyebpf::trackers
