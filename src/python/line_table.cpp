#include "python/line_table.hpp"

#include <cstddef>
#include <limits>

namespace pyebpf::python {
namespace {

using Table = std::span<const std::uint8_t>;

// CPython keeps line numbers in a C int. Decoding accumulates in 64 bits so that
// garbage deltas cannot overflow, and only a result that fits is reported. A negative
// line can only come from a corrupt table or a corrupt co_firstlineno.
std::optional<int> as_line(std::int64_t line) {
  if (line < 0 || line > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(line);
}

// co_lnotab, CPython 3.8 and 3.9. Format: Objects/lnotab_notes.txt of those branches;
// reference decoder: PyCode_Addr2Line() in Objects/codeobject.c.
//
// The table is a list of (offset increment: unsigned byte, line increment: signed byte)
// pairs, starting from (0, co_firstlineno). A pair says "from this offset on, the line
// changes by this much". Big jumps are split into several pairs, so a pair may carry a
// zero offset increment (line jump > 127 or < -128) or a zero line increment (offset
// jump > 255); summing every pair whose offset is <= the query handles both.
std::optional<int> lnotab_line(Table table, int first_line, std::int64_t offset) {
  // CPython only ever writes whole pairs; an odd size means we copied a bad table.
  if (table.size() % 2 != 0) {
    return std::nullopt;
  }
  std::int64_t addr = 0;
  std::int64_t line = first_line;
  for (std::size_t i = 0; i < table.size(); i += 2) {
    addr += table[i];
    if (addr > offset) {
      break;
    }
    line += static_cast<std::int8_t>(table[i + 1]);
  }
  // No end marker exists: the last line runs to the end of the bytecode.
  return as_line(line);
}

// co_linetable, CPython 3.10 (PEP 626). Format: Objects/lnotab_notes.txt of the 3.10
// branch; reference decoder: advance() and PyLineTable_NextAddressRange() in
// Objects/codeobject.c.
//
// Still (unsigned byte, signed byte) pairs, but each pair now describes the byte range
// *following* it: [start, start + delta) belongs to line (previous line + line delta).
// A line delta of -128 means "this range has no line" and leaves the running line
// untouched. Zero-length ranges only carry line changes. The ranges cover the code
// exactly, so an offset beyond the last range is not in the table.
std::optional<int> linetable310_line(Table table, int first_line, std::int64_t offset) {
  if (table.size() % 2 != 0) {
    return std::nullopt;
  }
  constexpr std::int8_t kNoLine = -128;
  std::int64_t start = 0;
  std::int64_t line = first_line;
  for (std::size_t i = 0; i < table.size(); i += 2) {
    const std::int64_t end = start + table[i];
    const auto delta = static_cast<std::int8_t>(table[i + 1]);
    if (delta != kNoLine) {
      line += delta;
    }
    // Ranges are visited in order and offset >= start (it was >= every earlier end),
    // so the first range ending after the offset contains it. Empty ranges never do.
    if (offset < end) {
      return delta == kNoLine ? std::nullopt : as_line(line);
    }
    start = end;
  }
  return std::nullopt;
}

// Reads the 3.11+ location table (Objects/locations.md). Every entry starts with a byte
// with bit 7 set; all its other bytes have bit 7 clear. Each read checks both the end
// of the table and that bit, so a truncated entry or one running into the next header
// reports failure instead of being misread.
class LocationReader {
 public:
  explicit LocationReader(Table table) : table_(table) {}

  bool at_end() const { return pos_ >= table_.size(); }

  std::optional<std::uint8_t> header() {
    if (at_end() || (table_[pos_] & 0x80) == 0) {
      return std::nullopt;
    }
    return table_[pos_++];
  }

  // One byte of an entry's body.
  std::optional<std::uint8_t> body_byte() {
    if (at_end() || (table_[pos_] & 0x80) != 0) {
      return std::nullopt;
    }
    return table_[pos_++];
  }

  // varint: 6-bit chunks, least significant first, bit 6 set on all but the last chunk.
  // CPython encodes C ints (at most 33 bits once zig-zagged), i.e. at most 6 chunks;
  // anything longer is garbage, and the cap keeps the shift defined.
  std::optional<std::uint64_t> varint() {
    constexpr int kMaxChunks = 6;
    std::uint64_t value = 0;
    for (int chunk = 0; chunk < kMaxChunks; ++chunk) {
      const auto byte = body_byte();
      if (!byte) {
        return std::nullopt;
      }
      value |= static_cast<std::uint64_t>(*byte & 0x3f) << (6 * chunk);
      if ((*byte & 0x40) == 0) {
        return value;
      }
    }
    return std::nullopt;
  }

  // svarint: a varint whose lowest bit is the sign and the rest the magnitude.
  std::optional<std::int64_t> svarint() {
    const auto raw = varint();
    if (!raw) {
      return std::nullopt;
    }
    const auto magnitude = static_cast<std::int64_t>(*raw >> 1);
    return (*raw & 1) != 0 ? -magnitude : magnitude;
  }

  bool skip_body_bytes(int count) {
    for (int i = 0; i < count; ++i) {
      if (!body_byte()) {
        return false;
      }
    }
    return true;
  }

 private:
  Table table_;
  std::size_t pos_ = 0;
};

// co_linetable, CPython 3.11 and later (PEP 657). Format: Objects/locations.md;
// reference decoder: get_line_delta() and advance() in Objects/codeobject.c.
//
// Header byte: 1 | code (4 bits) | length - 1 (3 bits), length counted in 2-byte code
// units. Only the start line matters here; it is a delta from the previous entry's start
// line (co_firstlineno before the first entry):
//   codes 0-9   short form: same line; 1 byte of column data follows
//   codes 10-12 one-line form: line + (code - 10); 2 column bytes follow
//   code 13     no columns: svarint line delta
//   code 14     long form: svarint line delta, then end-line, column, end-column varints
//   code 15     no location: the range has no line and the running line is unchanged
// The whole entry is parsed (not just up to the line delta) so that a cut-off or
// corrupt entry is rejected rather than trusted.
std::optional<int> locations311_line(Table table, int first_line, std::int64_t offset) {
  constexpr int kNoLocation = 15;
  constexpr int kLongForm = 14;
  constexpr int kNoColumns = 13;
  constexpr int kOneLine0 = 10;
  // Garbage deltas could otherwise walk the running line toward int64 overflow.
  constexpr std::int64_t kLineSanityBound = std::int64_t{1} << 40;

  LocationReader reader(table);
  std::int64_t start = 0;
  std::int64_t line = first_line;
  while (!reader.at_end()) {
    const auto head = reader.header();
    if (!head) {
      return std::nullopt;
    }
    const int code = (*head >> 3) & 0x0f;
    const std::int64_t end = start + 2 * ((*head & 0x07) + 1);

    bool ok = true;
    if (code == kNoLocation) {
      // No body, no line change.
    } else if (code == kLongForm || code == kNoColumns) {
      const auto delta = reader.svarint();
      ok = delta.has_value();
      if (ok) {
        line += *delta;
      }
      if (ok && code == kLongForm) {
        ok = reader.varint() && reader.varint() && reader.varint();
      }
    } else if (code >= kOneLine0) {
      line += code - kOneLine0;
      ok = reader.skip_body_bytes(2);
    } else {
      ok = reader.skip_body_bytes(1);
    }
    if (!ok || line > kLineSanityBound || line < -kLineSanityBound) {
      return std::nullopt;
    }

    // As in 3.10, entries are contiguous and in order from offset 0.
    if (offset < end) {
      return code == kNoLocation ? std::nullopt : as_line(line);
    }
    start = end;
  }
  return std::nullopt;
}

}  // namespace

LineTableFormat line_table_format(int major, int minor) noexcept {
  if (major < 3 || (major == 3 && minor <= 9)) {
    return LineTableFormat::Lnotab;
  }
  if (major == 3 && minor == 10) {
    return LineTableFormat::Linetable310;
  }
  return LineTableFormat::Locations311;
}

std::optional<int> line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table, int first_line,
                                   std::int64_t instr_offset) noexcept {
  if (instr_offset < 0) {
    return std::nullopt;
  }
  switch (format) {
    case LineTableFormat::Lnotab:
      return lnotab_line(table, first_line, instr_offset);
    case LineTableFormat::Linetable310:
      return linetable310_line(table, first_line, instr_offset);
    case LineTableFormat::Locations311:
      return locations311_line(table, first_line, instr_offset);
  }
  return std::nullopt;
}

}  // namespace pyebpf::python
