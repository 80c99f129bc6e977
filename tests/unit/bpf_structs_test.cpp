// SPDX-License-Identifier: Apache-2.0
// The BPF <-> C++ struct contract, checked mechanically: every shared struct
// must have the same size and member offsets in the BTF of the embedded BPF
// object as in this C++ build.
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>

#include "gc.h"
#include "gc.skel.h"
#include "gil.h"
#include "gil.skel.h"
#include "handoff.h"
#include "handoff.skel.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "py_stack.h"
#include "py_stack.skel.h"
#include "tcp.h"
#include "tcp.skel.h"

namespace {

struct ObjectDeleter {
  void operator()(bpf_object* obj) const { bpf_object__close(obj); }
};
using Object = std::unique_ptr<bpf_object, ObjectDeleter>;

// Offset in bytes of `member` in struct `name`, from BTF; -1 if absent.
long btf_offset(const btf* b, const char* name, const char* member) {
  int id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
  if (id < 0) return -1;
  const btf_type* t = btf__type_by_id(b, id);
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    if (std::string(btf__name_by_offset(b, m->name_off)) == member) return btf_member_bit_offset(t, i) / 8;
  }
  return -1;
}

long btf_size(const btf* b, const char* name) {
  int id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
  return id < 0 ? -1 : static_cast<long>(btf__resolve_size(b, id));
}

#define EXPECT_SAME_LAYOUT(b, type, member) \
  EXPECT_EQ(btf_offset(b, #type, #member), static_cast<long>(offsetof(struct type, member))) << #type "." #member

TEST(BpfStructsTest, PyStackEventMatchesTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = py_stack_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));  // parsed only: no load, no root needed
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_event_header"), static_cast<long>(sizeof(pyebpf_event_header)));
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, ts_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_event_header, comm);

  EXPECT_EQ(btf_size(t, "pyebpf_py_stack"), static_cast<long>(sizeof(pyebpf_py_stack)));
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack, tstate);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack, frames);
  EXPECT_EQ(btf_size(t, "pyebpf_py_frame"), static_cast<long>(sizeof(pyebpf_py_frame)));
  EXPECT_SAME_LAYOUT(t, pyebpf_py_frame, instr);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_frame, tag);

  EXPECT_EQ(btf_size(t, "pyebpf_py_proc"), static_cast<long>(sizeof(pyebpf_py_proc)));
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, tss_slot);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, runtime);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_proc, code_type);
  EXPECT_EQ(btf_size(t, "pyebpf_py_layout"), static_cast<long>(sizeof(pyebpf_py_layout)));
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, frame_window);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, instr_kind);
  EXPECT_SAME_LAYOUT(t, pyebpf_py_layout, owner_cstack);

  EXPECT_EQ(btf_size(t, "pyebpf_py_stack_event"), static_cast<long>(sizeof(pyebpf_py_stack_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_py_stack_event, stack);
}

TEST(BpfStructsTest, HandoffStructsMatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = handoff_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_handoff_queued"), static_cast<long>(sizeof(pyebpf_handoff_queued)));
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, path);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, comm);
  EXPECT_EQ(btf_size(t, "pyebpf_handoff_event"), static_cast<long>(sizeof(pyebpf_handoff_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, pickup_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, main);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, fd);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, pickup_via);
  EXPECT_EQ(btf_size(t, "pyebpf_handoff_stats"), static_cast<long>(sizeof(pyebpf_handoff_stats)));
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, peer_closed);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, sum_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, hist);
}

TEST(BpfStructsTest, GilStructsMatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = gil_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_gil_proc"), static_cast<long>(sizeof(pyebpf_gil_proc)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, cond);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, locked);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, last_holder);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, switch_number);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, interp_ceval_gil);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_proc, hook);
  EXPECT_EQ(btf_size(t, "pyebpf_gil_event"), static_cast<long>(sizeof(pyebpf_gil_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, duration_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_changes);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, hook);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, waiter_stack);
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_event, holder_stack);
  EXPECT_EQ(btf_size(t, "pyebpf_gil_thread_key"), static_cast<long>(sizeof(pyebpf_gil_thread_key)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_thread_key, thread_id);
  EXPECT_EQ(btf_size(t, "pyebpf_gil_thread"), static_cast<long>(sizeof(pyebpf_gil_thread)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gil_thread, ns_tid);
}

TEST(BpfStructsTest, GcStructsMatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = gc_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_gc_event"), static_cast<long>(sizeof(pyebpf_gc_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, end_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, uncollectable);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, generation);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, hook);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, flags);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, stack);
  EXPECT_EQ(static_cast<long>(offsetof(pyebpf_gc_event, stack)), static_cast<long>(PYEBPF_GC_EVENT_FIXED));

  EXPECT_EQ(btf_size(t, "pyebpf_gc_proc"), static_cast<long>(sizeof(pyebpf_gc_proc)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gcstate);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, tstate_interp);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, interp_gc);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, stats);

  EXPECT_EQ(btf_size(t, "pyebpf_gc_gen_stats"), static_cast<long>(sizeof(pyebpf_gc_gen_stats)));
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen_stats, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen_stats, uncollectable);
}

TEST(BpfStructsTest, TcpStructsMatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = tcp_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_tcp_addrs"), static_cast<long>(sizeof(pyebpf_tcp_addrs)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, daddr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, sport);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, family);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, netns);
  EXPECT_EQ(btf_size(t, "pyebpf_tcp_owner"), static_cast<long>(sizeof(pyebpf_tcp_owner)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, connect_ns);
  EXPECT_EQ(btf_size(t, "pyebpf_tcp_thread_event"), static_cast<long>(sizeof(pyebpf_tcp_thread_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_thread_event, hdr);

  EXPECT_EQ(btf_size(t, "pyebpf_tcp_connect_event"), static_cast<long>(sizeof(pyebpf_tcp_connect_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, addrs);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, start_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, sk_err);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, same_thread);

  EXPECT_EQ(btf_size(t, "pyebpf_tcp_accept_event"), static_cast<long>(sizeof(pyebpf_tcp_accept_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, flags);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, established_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, handshake_rtt_us);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, accept_queue_max);

  EXPECT_EQ(btf_size(t, "pyebpf_tcp_loss_event"), static_cast<long>(sizeof(pyebpf_tcp_loss_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, type);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, ca_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, addrs);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, srtt_us);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, retrans_out);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, detail);
}

TEST(BpfStructsTest, OffCpuStructsMatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = offcpu_bpf__elf_bytes(&size);
  Object obj(bpf_object__open_mem(bytes, size, nullptr));
  ASSERT_TRUE(obj);
  const btf* t = bpf_object__btf(obj.get());
  ASSERT_TRUE(t);

  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_event"), static_cast<long>(sizeof(pyebpf_offcpu_event)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, runq_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, prev_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, kstack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, ustack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_event, py);
  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_native_stack"), static_cast<long>(sizeof(pyebpf_offcpu_native_stack)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_native_stack, depth);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_native_stack, ips);
  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_thread"), static_cast<long>(sizeof(pyebpf_offcpu_thread)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, phase);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_thread, prev_state);

  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_agg_key"), static_cast<long>(sizeof(pyebpf_offcpu_agg_key)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, gen);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, prev_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, kstack);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_key, pystack);
  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_agg_value"), static_cast<long>(sizeof(pyebpf_offcpu_agg_value)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, off_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, count);
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_agg_value, max_off_ns);
  EXPECT_EQ(btf_size(t, "pyebpf_offcpu_stack_key"), static_cast<long>(sizeof(pyebpf_offcpu_stack_key)));
  EXPECT_SAME_LAYOUT(t, pyebpf_offcpu_stack_key, hash);
}

}  // namespace
