// SPDX-License-Identifier: Apache-2.0
#include "dump/thread_reader.hpp"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bpf_runtime/features.hpp"
#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"
#include "thread_dump.skel.h"

namespace pyebpf::dump {

ThreadReader::ThreadReader(const bpf::SharedMaps& shared)
    : skel_("thread dump", {thread_dump_bpf__open, thread_dump_bpf__load, thread_dump_bpf__destroy}) {
  skel_->rodata->targ_use_bpf_loop = bpf::walk_frames_with_bpf_loop();
  skel_.load(shared);
  link_ = bpf::Link(bpf_program__attach_iter(skel_->progs.dump_threads, nullptr));
  if (!link_)
    throw Error(errno_text("thread dump: attach task iterator", errno),
                "pyebpf dump needs Linux >= 6.1 (sleepable task iterators reading another task's memory)");
}

ThreadReader::~ThreadReader() = default;

std::vector<pyebpf_thread_dump> ThreadReader::read(std::uint64_t min_blocked_ns) {
  skel_->bss->dump_min_blocked_ns = min_blocked_ns;
  Fd fd(bpf_iter_create(link_.fd()));
  if (!fd) throw Error(errno_text("thread dump: run task iterator", errno));
  std::vector<pyebpf_thread_dump> out;
  std::vector<char> buf;
  std::size_t have = 0;
  for (;;) {
    if (buf.size() - have < 64 * 1024) buf.resize(have + 256 * 1024);
    ssize_t n = ::read(fd.get(), buf.data() + have, buf.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno_text("thread dump: read task iterator", errno));
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  for (std::size_t at = 0; at + sizeof(pyebpf_thread_dump) <= have; at += sizeof(pyebpf_thread_dump)) {
    pyebpf_thread_dump rec;
    std::memcpy(&rec, buf.data() + at, sizeof(rec));
    out.push_back(rec);
  }
  return out;
}

}  // namespace pyebpf::dump
