// SPDX-License-Identifier: Apache-2.0
#include "trackers/common/bpf_counters.hpp"

#include <bpf/bpf.h>

#include <vector>

namespace pyebpf::trackers {

Counters read_counters(const bpf_map* map) {
  Counters sum{};
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return sum;
  std::vector<std::uint64_t> per_cpu(static_cast<std::size_t>(ncpus));
  for (std::uint32_t key = 0; key < PYEBPF_CNT_MAX; ++key) {
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, per_cpu.data())) continue;
    for (auto v : per_cpu) sum[key] += v;
  }
  return sum;
}

std::uint64_t recursion_misses(const bpf_program* prog) {
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  const int fd = bpf_program__fd(prog);
  if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) return 0;
  return info.recursion_misses;
}

std::string malformed_note(std::uint64_t malformed) {
  return malformed ? ", " + std::to_string(malformed) + " malformed records (a pyebpf bug: please report it)" : "";
}

}  // namespace pyebpf::trackers
