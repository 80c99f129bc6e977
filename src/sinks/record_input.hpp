// SPDX-License-Identifier: Apache-2.0
// The one place events come back from text: `pyebpf report FILE` reads JSON
// lines or SQLite rows (as JSON objects) and turns each into a Record once,
// stacks parsed into frames, so the report reads stored and live events alike.
#pragma once

#include <nlohmann/json.hpp>

#include "sinks/record.hpp"

namespace pyebpf::sinks {

// Fills `out` (whose schema the caller chose by the object's "metric") from
// a JSON object as pyebpf writes it. Fields the schema does not know (another
// pyebpf version's) are ignored; a value of the wrong type leaves its field
// absent. Values are taken leniently: a number where an integer belongs is
// rounded, a non-string where text belongs is kept as its JSON text; but an
// integer the column's type cannot hold (or beyond ±2^53) leaves it absent.
void record_from_json(const nlohmann::ordered_json& object, Record& out);

}  // namespace pyebpf::sinks
