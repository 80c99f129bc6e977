// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <array>
#include <cstdint>

#include "common.h"

namespace pyebpf::trackers {

using Counters = std::array<std::uint64_t, PYEBPF_CNT_MAX>;

// Sums a tracker's per-CPU `counters` map (see bpf/common.h).
Counters read_counters(const bpf_map* map);

// Runs of the loaded program the kernel skipped because a program of its kind
// was already running on that CPU (its recursion guard): a hook fired by an
// interrupt that arrived during another run of it. Nothing else counts them.
std::uint64_t recursion_misses(const bpf_program* prog);

}  // namespace pyebpf::trackers
