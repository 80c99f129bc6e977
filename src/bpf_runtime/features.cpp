// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/features.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "pyebpf/fd.hpp"

// libbpf's own definitions, which the linker's --wrap renames (see the end).
extern "C" btf* __real_btf__load_vmlinux_btf();
extern "C" void __real_btf__free(btf* b);

namespace pyebpf::bpf {
namespace {

// The parsed vmlinux BTF every user shares until release_kernel_btf(). The
// lock is for loads that run at once (start_turn.hpp); readers of the BTF
// itself need none, nothing writes it.
std::mutex vmlinux_btf_lock;
btf* shared_vmlinux_btf = nullptr;

btf* vmlinux_btf() {
  std::lock_guard lock(vmlinux_btf_lock);
  if (!shared_vmlinux_btf) shared_vmlinux_btf = __real_btf__load_vmlinux_btf();
  return shared_vmlinux_btf;
}

bool is_shared_vmlinux_btf(const btf* b) {
  std::lock_guard lock(vmlinux_btf_lock);
  return b && b == shared_vmlinux_btf;
}

}  // namespace

bool walk_frames_with_bpf_loop() {
  static const bool use = [] {
    const char* forced = std::getenv("PYEBPF_FRAME_WALK");
    if (forced && std::string_view(forced) == "bounded") {
      spdlog::info("Python frame walks use a bounded loop (PYEBPF_FRAME_WALK=bounded)");
      return false;
    }
    bool ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr) == 1;
    spdlog::debug("kernel {} bpf_loop: Python frame walks use {}", ok ? "has" : "lacks",
                  ok ? "bpf_loop" : "a bounded loop");
    return ok;
  }();
  return use;
}

namespace {

int btf_tracepoint_id(const char* name) {
  const btf* b = vmlinux_btf();
  if (!b) return -1;
  std::string type = std::string("btf_trace_") + name;
  return btf__find_by_name_kind(b, type.c_str(), BTF_KIND_TYPEDEF);
}

}  // namespace

void release_kernel_btf() {
  {
    std::lock_guard lock(vmlinux_btf_lock);
    __real_btf__free(shared_vmlinux_btf);
    shared_vmlinux_btf = nullptr;
  }
  // Start-up's big buffers (BTF, ELF symbol tables) were freed into the heap
  // (glibc raises its mmap threshold after the first big free, so later ones
  // come from the heap): give those pages back rather than hold them all run.
  malloc_trim(0);
}

bool kernel_has_btf_tracepoint(const char* name) {
  return btf_tracepoint_id(name) > 0;
}

bool kernel_loads_tp_btf(const char* name) {
  int btf_id = btf_tracepoint_id(name);
  if (btf_id <= 0) return false;
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // exit
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
              .attach_btf_id = static_cast<__u32>(btf_id));
  Fd fd(bpf_prog_load(BPF_PROG_TYPE_TRACING, nullptr, "GPL", insns, 2, &opts));
  if (!fd) spdlog::debug("probe tp_btf/{}: load failed: {}", name, std::strerror(errno));
  return static_cast<bool>(fd);
}

bool kernel_struct_has_member(const char* name, const char* member) {
  const btf* b = vmlinux_btf();
  int id = b ? btf__find_by_name_kind(b, name, BTF_KIND_STRUCT) : -1;
  if (id <= 0) return false;
  const btf_type* t = btf__type_by_id(b, static_cast<__u32>(id));
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i)
    if (std::strcmp(btf__name_by_offset(b, m[i].name_off), member) == 0) return true;
  return false;
}

int btf_tracepoint_args(const char* name) {
  int id = btf_tracepoint_id(name);
  if (id <= 0) return -1;
  const btf* b = vmlinux_btf();
  const btf_type* t = btf__type_by_id(b, btf__type_by_id(b, static_cast<__u32>(id))->type);  // the pointer
  if (!t || !btf_is_ptr(t)) return -1;
  t = btf__type_by_id(b, t->type);
  return t && btf_is_func_proto(t) ? static_cast<int>(btf_vlen(t)) - 1 : -1;
}

std::vector<std::string> kernel_enum_names(const char* name, const std::string& prefix) {
  std::vector<std::string> out;
  const btf* b = vmlinux_btf();
  int id = b ? btf__find_by_name_kind(b, name, BTF_KIND_ENUM) : -1;
  if (id <= 0) return out;
  const btf_type* t = btf__type_by_id(b, static_cast<__u32>(id));
  const struct btf_enum* e = btf_enum(t);
  for (int i = 0; i < btf_vlen(t); ++i) {
    std::string n = btf__name_by_offset(b, e[i].name_off);
    if (n.rfind(prefix, 0) == 0) n = n.substr(prefix.size());
    if (e[i].val < 0 || e[i].val > 4096) continue;
    auto value = static_cast<std::size_t>(e[i].val);
    if (out.size() <= value) out.resize(value + 1);
    out[value] = n;
  }
  return out;
}

}  // namespace pyebpf::bpf

// libbpf parses /sys/kernel/btf/vmlinux (5.5 MB here) for every object it
// loads, to relocate CO-RE accesses and find tp_btf targets, and frees it
// when the load ends: nine objects meant nine reads and parses at start,
// ~25 ms and ~11 MB of heap each. The link step (CMakeLists.txt: --wrap;
// libbpf is linked statically, so its calls between its own files are
// wrapped too) routes them here: every load until release_kernel_btf() (the
// runner's, once every tracker started) reads the one parsed copy, which
// libbpf never modifies.
extern "C" btf* __wrap_btf__load_vmlinux_btf() {
  return pyebpf::bpf::vmlinux_btf();
}

extern "C" void __wrap_btf__free(btf* b) {
  if (pyebpf::bpf::is_shared_vmlinux_btf(b)) return;  // the end of one load: kept for the next
  __real_btf__free(b);
}
