// SPDX-License-Identifier: Apache-2.0
// ObjectReader on str objects laid out in this process's own memory the way
// CPython 3.12 lays them out (offsets/cpython.json), honest and corrupted: a
// target can overwrite its own objects, and what pyebpf prints from them must
// be their text or nothing, never the memory around them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "python/memory.hpp"
#include "python/objects.hpp"
#include "python/offsets.hpp"

namespace pyebpf::python {
namespace {

const OffsetsRow& row_3_12() {
  for (const auto& row : OffsetsTable::embedded().rows()) {
    if (row.label == "pyenv-3.12.1") return row;
  }
  throw std::runtime_error("no row pyenv-3.12.1");
}

// A compact str in a buffer with room after it, so a lying length reads
// bytes that exist.
class CraftedStr {
 public:
  CraftedStr(const OffsetsRow& row, const std::string& text, bool ascii_flag = true)
      : row_(row),
        data_at_(*row.size(ascii_flag ? "PyASCIIObject" : "PyCompactUnicodeObject")),
        buffer_(data_at_ + 8192, 'A') {
    set_u64(*row.field("unicode.length"), text.size());
    std::uint32_t state = 0;
    state |= 1u << row.bit("unicode.state.kind")->bit;  // 1-byte kind
    state |= 1u << row.bit("unicode.state.compact")->bit;
    if (ascii_flag) state |= 1u << row.bit("unicode.state.ascii")->bit;
    std::memcpy(buffer_.data() + *row.field("unicode.state"), &state, sizeof(state));
    std::memcpy(data(), text.data(), text.size());
    data()[text.size()] = 0;
  }
  void set_length(std::uint64_t length) { set_u64(*row_.field("unicode.length"), length); }
  char* data() { return buffer_.data() + data_at_; }
  std::uint64_t address() const { return reinterpret_cast<std::uint64_t>(buffer_.data()); }

 private:
  void set_u64(std::size_t at, std::uint64_t v) { std::memcpy(buffer_.data() + at, &v, sizeof(v)); }
  const OffsetsRow& row_;
  std::size_t data_at_;  // where the text starts: after the ASCII or the compact header
  std::vector<char> buffer_;
};

struct ReadStr : ::testing::Test {
  ProcessMemory memory{getpid()};
  ObjectReader reader{memory, row_3_12(), row_3_12().python, TypeAddresses{}};
};

TEST_F(ReadStr, AnHonestStrIsItsText) {
  CraftedStr s(row_3_12(), "handle_request");
  EXPECT_EQ(reader.read_str(s.address()), "handle_request");
  EXPECT_EQ(reader.read_str(s.address(), 6), "handle") << "cut at max_chars, its NUL still checked where it is";
}

TEST_F(ReadStr, ALengthThatDoesNotEndOnItsNulIsRefused) {
  CraftedStr s(row_3_12(), "lying_name");
  s.set_length(3000);  // what follows is 'A's, not the NUL
  EXPECT_EQ(reader.read_str(s.address()), std::nullopt);
  EXPECT_EQ(reader.read_str(s.address(), 16), std::nullopt);
  s.set_length(std::uint64_t{1} << 40);
  EXPECT_EQ(reader.read_str(s.address()), std::nullopt);
}

TEST_F(ReadStr, AnAsciiFlaggedStrWithHighBytesIsRefused) {
  CraftedStr s(row_3_12(), "high_bytes.py");
  std::memcpy(s.data(), "\xff\xfe\xc3\x28", 4);
  EXPECT_EQ(reader.read_str(s.address()), std::nullopt);
  // The same bytes in a 1-byte (Latin-1) str are text: valid UTF-8 out.
  CraftedStr latin1(row_3_12(), "\xe9t\xe9", false);
  EXPECT_EQ(reader.read_str(latin1.address()), "\xc3\xa9t\xc3\xa9");
}

}  // namespace
}  // namespace pyebpf::python
