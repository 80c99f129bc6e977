// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/perf_sampler.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"

namespace pyebpf::bpf {

PerfSampler::PerfSampler(bpf_program* prog, unsigned frequency_hz) : event_name_("software cpu-clock") {
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) throw Error(errno_text("cannot count CPUs", -ncpus));
  for (int cpu = 0; cpu < ncpus; ++cpu) {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.freq = 1;
    attr.sample_freq = frequency_hz;
    Fd fd(static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
    if (!fd) {
      if (errno == ENODEV) continue;  // possible but offline CPU
      throw Error(errno_text("perf_event_open(cpu-clock, cpu " + std::to_string(cpu) + ")", errno),
                  "needs root or CAP_PERFMON; check kernel.perf_event_paranoid");
    }
    bpf_link* link = bpf_program__attach_perf_event(prog, fd.get());
    if (!link) throw Error(errno_text("attach BPF sampler to cpu " + std::to_string(cpu), errno));
    fd.release();  // the link closes it
    links_.emplace_back(link);
  }
  if (links_.empty()) throw Error("no online CPU accepted a sampling event");
}

}  // namespace pyebpf::bpf
