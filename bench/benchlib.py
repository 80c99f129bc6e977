"""Helpers shared by pyebpf's benchmarks (bench/*): start and stop pyebpf,
read CPU time and peak memory of a process, read BPF program run times.
Benchmarks print ratios; they are not timed tests."""
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYEBPF = os.path.join(ROOT, "build", "pyebpf")


def cpu_seconds(pid):
    """utime + stime of a process (all its threads) so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def start_pyebpf(args, out, binary=PYEBPF):
    """Starts pyebpf with `args` and returns once it is tracing. The process
    object gets .cpu_at_start: attach cost is not per-event overhead."""
    p = subprocess.Popen([binary] + args, stdout=out, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "info: tracing" in line:
            p.cpu_at_start = cpu_seconds(p.pid)
            return p
    sys.exit("pyebpf did not start: " + p.stderr.read())


def stop_pyebpf(p):
    """SIGINT; returns (CPU seconds used since tracing began, peak RSS KiB, stderr summary text)."""
    cpu = cpu_seconds(p.pid) - p.cpu_at_start
    rss = peak_rss_kib(p.pid)
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    p.wait(30)
    return cpu, rss, rest


def prog_ns_per_run(prefix):
    """Mean run time per call of the loaded BPF programs whose name starts with
    `prefix` (needs kernel.bpf_stats_enabled=1, see bpf_stats())."""
    try:
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        return {}
    return {p["name"]: p["run_time_ns"] / p["run_cnt"] for p in progs
            if p.get("name", "").startswith(prefix) and p.get("run_cnt")}


@contextlib.contextmanager
def bpf_stats():
    """kernel.bpf_stats_enabled=1 for the duration, restored afterwards (it
    adds two clock reads per BPF program run, so it must not stay on)."""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as f:
        before = f.read().strip()
    with open(path, "w") as f:
        f.write("1")
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(before)


def report_ratio(label, without, with_):
    b, t = statistics.median(without), statistics.median(with_)
    print("%s: median without %.4g, with %.4g, ratio %.4f (%+.2f%%)" % (label, b, t, t / b, 100 * (t / b - 1)))
    return t / b
