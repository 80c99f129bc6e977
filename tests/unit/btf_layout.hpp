// SPDX-License-Identifier: Apache-2.0
// The BPF <-> C++ struct contract, checked mechanically: a shared struct must
// have the same size and member offsets in the BTF of the embedded BPF object
// as in this C++ build. Each tracker's test checks its own bpf/<name>.h.
#pragma once

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>

namespace pyebpf::test {

// An embedded BPF object (<name>_bpf__elf_bytes), parsed only: no load, no root needed.
class EmbeddedObject {
 public:
  EmbeddedObject(const void* bytes, std::size_t size) : obj_(bpf_object__open_mem(bytes, size, nullptr)) {}
  const struct btf* types() const { return obj_ ? bpf_object__btf(obj_.get()) : nullptr; }

 private:
  struct Close {
    void operator()(bpf_object* obj) const { bpf_object__close(obj); }
  };
  std::unique_ptr<bpf_object, Close> obj_;
};

// Offset in bytes of `member` in struct `name`, from BTF; -1 if absent.
inline long btf_offset(const struct btf* b, const char* name, const char* member) {
  int id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
  if (id < 0) return -1;
  const btf_type* t = btf__type_by_id(b, id);
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    if (std::string(btf__name_by_offset(b, m->name_off)) == member) return btf_member_bit_offset(t, i) / 8;
  }
  return -1;
}

inline long btf_size(const struct btf* b, const char* name) {
  int id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
  return id < 0 ? -1 : static_cast<long>(btf__resolve_size(b, id));
}

}  // namespace pyebpf::test

#define EXPECT_SAME_SIZE(b, type) \
  EXPECT_EQ(pyebpf::test::btf_size(b, #type), static_cast<long>(sizeof(struct type))) << #type
#define EXPECT_SAME_LAYOUT(b, type, member)                                                                \
  EXPECT_EQ(pyebpf::test::btf_offset(b, #type, #member), static_cast<long>(offsetof(struct type, member))) \
      << #type "." #member
