// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "python.h"
#include "python/offsets.hpp"
#include "python/version.hpp"

namespace pyebpf::python {

// Builds the walker layout BPF uses from one offsets table row. Throws
// pyebpf::Error naming the field if the row lacks one the walker needs or an
// offset does not fit the BPF window.
pyebpf_py_layout make_bpf_layout(const OffsetsRow& row, const PyVersion& version);

}  // namespace pyebpf::python
