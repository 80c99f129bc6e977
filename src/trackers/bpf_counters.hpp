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

}  // namespace pyebpf::trackers
