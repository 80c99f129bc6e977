// SPDX-License-Identifier: Apache-2.0
#include "bpf/shared_maps.hpp"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "pyebpf/error.hpp"

namespace pyebpf::bpf {
namespace {

Fd create_map(bpf_map_type type, const char* name, __u32 key, __u32 value, __u32 entries) {
  int fd = bpf_map_create(type, name, key, value, entries, nullptr);
  if (fd < 0) throw Error(errno_text(std::string("create BPF map ") + name, errno), "run pyebpf as root");
  return Fd(fd);
}

}  // namespace

SharedMaps::SharedMaps()
    : py_procs_(create_map(BPF_MAP_TYPE_HASH, "py_procs", sizeof(__u32), sizeof(pyebpf_py_proc), PYEBPF_MAX_PROCS)),
      py_tstates_(create_map(BPF_MAP_TYPE_LRU_HASH, "py_tstates", sizeof(__u32), sizeof(pyebpf_tstate_hint),
                             PYEBPF_TSTATE_ENTRIES)) {}

void SharedMaps::reuse_in(bpf_object* obj) const {
  struct Shared {
    const char* name;
    int fd;
  };
  for (const Shared& s : {Shared{"py_procs", py_procs_.get()}, Shared{"py_tstates", py_tstates_.get()}}) {
    bpf_map* map = bpf_object__find_map_by_name(obj, s.name);
    if (!map) continue;
    if (int err = bpf_map__reuse_fd(map, s.fd)) throw Error(errno_text(std::string("share BPF map ") + s.name, -err));
  }
}

void SharedMaps::add_process(pid_t pid, const pyebpf_py_proc& config) const {
  __u32 key = static_cast<__u32>(pid);
  if (bpf_map_update_elem(py_procs_.get(), &key, &config, BPF_ANY))
    throw Error(errno_text("register pid " + std::to_string(pid) + " in py_procs", errno));
}

void SharedMaps::remove_process(pid_t pid) const {
  __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(py_procs_.get(), &key);
}

}  // namespace pyebpf::bpf
