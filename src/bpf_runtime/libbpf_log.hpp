// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// Routes libbpf's messages into spdlog: debug output (verifier logs included)
// at trace, info at debug, warnings at warn.
void install_libbpf_logger();

}  // namespace pyebpf::bpf
