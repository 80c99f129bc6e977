// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// Whether the running kernel offers bpf_loop() (Linux 5.17+) to perf_event,
// kprobe-class and tracing programs. Probed once by loading a tiny program.
bool kernel_has_bpf_loop();

}  // namespace pyebpf::bpf
