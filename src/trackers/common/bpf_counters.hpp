// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <array>
#include <cstdint>
#include <string>

#include "common.h"

namespace pyebpf::trackers {

using Counters = std::array<std::uint64_t, PYEBPF_CNT_MAX>;

// Sums a tracker's per-CPU `counters` map (see bpf/common.h).
Counters read_counters(const bpf_map* map);

// Runs of the loaded program the kernel skipped because a program of its kind
// was already running on that CPU (its recursion guard): a hook fired by an
// interrupt that arrived during another run of it. Nothing else counts them.
std::uint64_t recursion_misses(const bpf_program* prog);

// For a summary line, after its count of events lost to a full ring buffer:
// records shorter than their struct, which mean pyebpf's BPF and user-space
// halves disagree (a bug), not that a ring was full. Empty when there are none.
std::string malformed_note(std::uint64_t malformed);

}  // namespace pyebpf::trackers
