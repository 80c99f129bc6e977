// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/shared_maps.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "pyebpf/error.hpp"

namespace pyebpf::bpf {
namespace {

Fd create_map(bpf_map_type type, const char* name, __u32 key, __u32 value, __u32 entries, __u32 flags = 0) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
  int fd = bpf_map_create(type, name, key, value, entries, &opts);
  if (fd < 0) throw Error(errno_text(std::string("create BPF map ") + name, errno), "run pyebpf as root");
  return Fd(fd);
}

// Task storage needs BTF for its key and value: an int and an opaque struct
// of the size the BPF objects declare (libbpf checks each reusing object's
// definition against the map: type, sizes, flags).
Fd create_task_storage(const char* name, __u32 value_size) {
  std::unique_ptr<btf, decltype(&btf__free)> types(btf__new_empty(), btf__free);
  const int key = types ? btf__add_int(types.get(), "int", sizeof(int), BTF_INT_SIGNED) : -ENOMEM;
  const int value = types ? btf__add_struct(types.get(), name, value_size) : -ENOMEM;
  if (key < 0 || value < 0) throw Error(errno_text(std::string("describe BPF map ") + name, -(key < 0 ? key : value)));
  if (int err = btf__load_into_kernel(types.get()))
    throw Error(errno_text(std::string("load the BTF of BPF map ") + name, -err), "run pyebpf on a kernel with BTF");
  LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = static_cast<__u32>(btf__fd(types.get())),
              .btf_key_type_id = static_cast<__u32>(key), .btf_value_type_id = static_cast<__u32>(value),
              .map_flags = BPF_F_NO_PREALLOC);
  int fd = bpf_map_create(BPF_MAP_TYPE_TASK_STORAGE, name, sizeof(int), value_size, 0, &opts);
  if (fd < 0) throw Error(errno_text(std::string("create BPF map ") + name, errno), "run pyebpf on Linux >= 5.11");
  return Fd(fd);
}

}  // namespace

SharedMaps::SharedMaps()
    : py_procs_(create_map(BPF_MAP_TYPE_HASH, "py_procs", sizeof(__u32), sizeof(pyebpf_py_proc), PYEBPF_MAX_PROCS)),
      py_proc_slots_(
          create_map(BPF_MAP_TYPE_ARRAY, "py_proc_slots", sizeof(__u32), sizeof(pyebpf_proc_slots), 1, BPF_F_MMAPABLE)),
      py_tstates_(create_map(BPF_MAP_TYPE_LRU_HASH, "py_tstates", sizeof(__u32), sizeof(pyebpf_tstate_hint),
                             PYEBPF_TSTATE_ENTRIES)) {
  void* mem = mmap(nullptr, sizeof(pyebpf_proc_slots), PROT_READ | PROT_WRITE, MAP_SHARED, py_proc_slots_.get(), 0);
  if (mem == MAP_FAILED) throw Error(errno_text("mmap BPF map py_proc_slots", errno), "run pyebpf on Linux >= 5.8");
  slots_ = static_cast<pyebpf_proc_slots*>(mem);
}

SharedMaps::~SharedMaps() {
  munmap(slots_, sizeof(pyebpf_proc_slots));
}

void SharedMaps::reuse_in(bpf_object* obj) const {
  struct Shared {
    const char* name;
    int fd;
  };
  for (const Shared& s : {Shared{"py_procs", py_procs_.get()}, Shared{"py_proc_slots", py_proc_slots_.get()},
                          Shared{"py_tstates", py_tstates_.get()}, Shared{"thread_records", -1}}) {
    bpf_map* map = bpf_object__find_map_by_name(obj, s.name);
    if (!map || !bpf_map__autocreate(map)) continue;
    const int fd = s.fd >= 0 ? s.fd : thread_records_fd(bpf_map__value_size(map));
    if (int err = bpf_map__reuse_fd(map, fd)) throw Error(errno_text(std::string("share BPF map ") + s.name, -err));
  }
}

// Made by the first object that declares it, with that object's definition.
int SharedMaps::thread_records_fd(std::uint32_t value_size) const {
  std::lock_guard lock(thread_records_mutex_);
  if (!thread_records_) thread_records_ = create_task_storage("thread_records", value_size);
  return thread_records_.get();
}

std::uint32_t& SharedMaps::slot(pid_t pid) const {
  return slots_->count[static_cast<std::uint32_t>(pid) & (PYEBPF_PROC_SLOTS - 1)];
}

// Same order as pyebpf_add_proc: the slot counts the entry before it exists.
void SharedMaps::add_process(pid_t pid, const pyebpf_py_proc& config) const {
  __u32 key = static_cast<__u32>(pid);
  std::atomic_ref count(slot(pid));
  count.fetch_add(1);
  for (int i = 0; i < 2; i++) {
    if (!bpf_map_update_elem(py_procs_.get(), &key, &config, BPF_NOEXIST)) return;
    if (errno != EEXIST) break;
    if (!bpf_map_update_elem(py_procs_.get(), &key, &config, BPF_EXIST)) {
      count.fetch_sub(1);  // replaced an entry counted when it was created (a fork's copy)
      return;
    }
  }
  const int saved = errno;
  count.fetch_sub(1);
  throw Error(errno_text("register pid " + std::to_string(pid) + " in py_procs", saved));
}

void SharedMaps::remove_process(pid_t pid) const {
  __u32 key = static_cast<__u32>(pid);
  if (!bpf_map_delete_elem(py_procs_.get(), &key)) std::atomic_ref(slot(pid)).fetch_sub(1);
}

}  // namespace pyebpf::bpf
