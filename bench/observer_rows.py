"""bench/observer's pairing machinery and the rows that trace a workload of
their own (GC-heavy, GIL convoy, py_stack per sample) or time processes
that are not targets (children lifecycle hooks). Each row function takes the
observer's Env and returns Rows; none asserts anything."""
import collections
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

import benchlib

PYTHON = "/usr/bin/python3.11"
# A CPython that counts the code objects it frees (3.14+), so py_stack's
# walker remembers code objects across samples: Debian sid's, in the root
# tools/install-sid-root builds.
SID_ROOT = os.environ.get("PYEBPF_SID_ROOT", "/var/cache/pyebpf/sid")
SID_PYTHON = "/usr/bin/python3.14"


@dataclass
class Row:
    what: str
    unit: str
    without: float = None  # median; None where there is no "without" (start time)
    with_: float = None
    goal: str = ""
    ok: bool = None
    ratio: float = None  # median of the pairs' ratios (each pair ran close in time)
    headline: bool = False  # also in the README's short summary


def paired_row(what, unit, without, with_, goal=""):
    """A row from paired() lists: medians of each side, median of the pair ratios."""
    return Row(what, unit, statistics.median(without), statistics.median(with_), goal,
               ratio=statistics.median(w / o for o, w in zip(without, with_)))


def ratio_row(what, unit, without, with_, goal_ratio, headline=False):
    """paired_row() whose goal is "ratio <= goal_ratio"."""
    row = paired_row(what, unit, without, with_, "ratio <= %.2f" % goal_ratio)
    row.ok, row.headline = row.ratio <= goal_ratio, headline
    return row


def throughput_row(what, unit, without, with_, goal_ratio, headline=False):
    """paired_row() of work done (more is better) whose goal, if any, is
    "ratio >= goal_ratio"."""
    row = paired_row(what, unit, without, with_, "ratio >= %.2f" % goal_ratio if goal_ratio else "")
    if goal_ratio:
        row.ok, row.headline = row.ratio >= goal_ratio, headline
    return row


@contextlib.contextmanager
def with_pyebpf(env, options=(), target=None, out=subprocess.DEVNULL):
    """pyebpf tracing the demo app (or `target`) with `options` (default: every
    tracker) for the duration, its events to `out`; yields the process, whose
    .start_s is exec-to-tracing time and, once stopped, .cpu_s, .peak_rss_kib
    and .summary are set."""
    args = ["-p", str(target or env.target), "-e", "bench"] + list(options)
    t0 = time.monotonic()
    p = benchlib.start_pyebpf(args, out, env.args.pyebpf)
    p.start_s = time.monotonic() - t0
    env.mine.add(p.pid)
    try:
        yield p
    finally:
        p.cpu_s, p.peak_rss_kib, p.summary = benchlib.stop_pyebpf(p)


def paired(pairs, without, with_, disturbed=lambda: False):
    """Runs without() and with_() `pairs` times each in ABBA order; returns both
    lists. A pair during which disturbed() turned true is measured again (up
    to 3 times), keeping the last try."""
    a, b = [], []
    for i in range(pairs):
        for _ in range(3):
            disturbed()  # reset
            if i % 2 == 0:
                x = without()
                y = with_()
            else:
                y = with_()
                x = without()
            if not disturbed():
                break
        a.append(x)
        b.append(y)
    return a, b


def other_pyebpf(mine=()):
    """Pids of pyebpf processes this benchmark did not start: their hooks tax
    the "without" side too (run it under flock /tmp/pyebpf-e2e.lock)."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/comm" % d) as f:
                if d.isdigit() and f.read().strip() == "pyebpf" and int(d) not in mine:
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def untraced_pairs(env, measure, options=()):
    """paired() measure() (of a process that is not a target) without and with
    pyebpf tracing the demo app with `options`; a pair during which another
    pyebpf ran is measured again."""
    def checked():
        env.seen_other |= bool(other_pyebpf(env.mine))
        value = measure()
        env.seen_other |= bool(other_pyebpf(env.mine))
        return value

    def traced():
        with with_pyebpf(env, options):
            return checked()

    def disturbed():
        seen, env.seen_other = env.seen_other, False
        env.disturbed |= seen
        return seen

    return paired(env.args.pairs, checked, traced, disturbed)


def compile_c(tmp, name, source):
    """Compiles C `source` with -O2 into tmp/name; returns the executable's path."""
    src, exe = os.path.join(tmp, name + ".c"), os.path.join(tmp, name)
    with open(src, "w") as f:
        f.write(source)
    cc = shutil.which("cc") or shutil.which("clang")
    subprocess.run([cc, "-O2", "-o", exe, src], check=True)
    return exe


# How long a workload waits, idle, between READY and GO on both sides of a
# pair. Without it the traced side alone slept (through pyebpf's start) and
# on a loaded machine then ran a third faster in wall time: a task waking from
# a sleep is placed ahead of tasks that ran all along, a fresh busy one is not.
SETTLE_S = 1.0


def traced_workload(env, options, name, *args, out=subprocess.DEVNULL, drain_s=0, steady_after_s=None,
                    python=PYTHON, root=None):
    """One run of bench/workloads/<name> (under `python`, in `root` if given):
    its RESULT, and the pyebpf process that traced it with `options` (None:
    no pyebpf). drain_s: how long pyebpf keeps running after the workload
    ended, to read what its rings still hold. steady_after_s: the pyebpf
    process gets .steady = ((epoch s, its CPU s) that long after the workload
    began, (the same) when it ended)."""
    w = benchlib.start_workload(python, name, *args, root=root)
    if options is None:
        time.sleep(SETTLE_S)
        return benchlib.workload_result(w), None
    with with_pyebpf(env, options, w.pid, out) as p:
        time.sleep(SETTLE_S)
        mark = lambda: (time.time(), benchlib.cpu_seconds(p.pid))
        marks, timer = [], None
        if steady_after_s is not None:
            timer = threading.Timer(steady_after_s, lambda: marks.append(mark()))
            timer.start()
        result = benchlib.workload_result(w)
        if timer:
            timer.cancel()
        if marks:
            p.steady = (marks[0], mark())
        time.sleep(drain_s)
    return result, p


# The GC-heavy row's goal is stated at this rate (issue 11): its target makes
# about this many gen-0 collections per CPU-second, whatever the machine.
# Gen-0 collections per CPU-second of the GC-heavy rows: a busy service's
# rate, and issue 36's worst case.
GC_RATES = (8000, 15000)
GC_BASE_THRESHOLD = 350
# A GC-heavy run is ~0.3 s of work, so one pair moves by several %: at least
# this many pairs, enough for the median of the pair ratios and the ratio of
# the medians to agree within ~2 %.
GC_MIN_PAIRS = 12


def rows_gc(env):
    """Short-lived cyclic garbage (bench/workloads/gc_churn.py) at about
    each of GC_RATES gen-0 collections per CPU-second, with `--enable gc` at
    its defaults (no probe on a target collecting this fast), then at the
    first rate with `--gc-pauses on` (two traps per collection) for
    comparison. The rate is fixed, not the work: untraced runs from gen-0
    threshold GC_BASE_THRESHOLD on measure this machine's rate, and the young
    generation's threshold is scaled so that every paired run makes about the
    rate (a faster CPU then collects more objects per collection, not more
    collections per second than the goal assumes). The target's own thread
    CPU time is the measure; each row names both ratios and the pairs."""
    def run(options, threshold):
        return traced_workload(env, options, "gc_churn.py", env.args.gc_objects, threshold)[0]

    def calibrated(rate_goal):
        # The median rate of three untraced runs (one alone can be off by 30 %
        # on a busy VM), twice: a collection's fixed cost makes the rate fall
        # short of proportional to 1/threshold, so the first step undershoots.
        threshold = GC_BASE_THRESHOLD
        for _ in range(2):
            rate = statistics.median(r["gen0"] / r["cpu"] for r in (run(None, threshold) for _ in range(3)))
            threshold = max(GC_BASE_THRESHOLD, round(threshold * rate / rate_goal))
        return threshold

    pairs = max(env.args.pairs, GC_MIN_PAIRS)
    rows = []
    for rate_goal, options, goal in ((GC_RATES[0], [], 1.05), (GC_RATES[1], [], 1.05),
                                     (GC_RATES[0], ["--gc-pauses", "on"], None)):
        threshold = calibrated(rate_goal)
        without, with_ = paired(pairs, lambda: run(None, threshold),
                                lambda: run(["--enable", "gc"] + options, threshold))
        cpu_without, cpu_with = [r["cpu"] for r in without], [r["cpu"] for r in with_]
        what = "GC-heavy target (%.0f gen-0 collections per CPU-s, threshold %d), --enable gc%s, thread CPU " \
               "(ratio of medians %.3f, %d pairs)" % (
                   statistics.median(r["gen0"] / r["cpu"] for r in without), threshold,
                   " " + " ".join(options) if options else " (defaults)",
                   statistics.median(cpu_with) / statistics.median(cpu_without), pairs)
        if goal:
            rows.append(ratio_row(what, "s", cpu_without, cpu_with, goal, rate_goal == GC_RATES[1]))
        else:
            rows.append(paired_row(what, "s", cpu_without, cpu_with))
    return rows


CONVOY_THREADS = 500
# The "sustained" rate is measured from this long after the convoy began:
# before it, pyebpf does its one-time work (kernel symbols for offcpu, the
# first read of 500 thread names, code objects met for the first time).
CONVOY_WARMUP_S = 1.0
CONVOY_OPTIONS = ["--enable", "py_stack", "--enable", "gil", "--enable", "offcpu"]
# Every GIL wait an event: the same convoy at the highest rate it can make
# (the goal: nothing lost at 20,000 events/s).
CONVOY_EVERY_WAIT = ["--gil-min-wait-ms", "0", "--gil-max-events", "0"]
# Issue 31: what the convoy keeps of its throughput with the trackers it
# meets first alone, and with every tracker (pyebpf's default): (label,
# options, goal as the least ratio of loops/s, None for none).
CONVOY_GOALS = [
    ("gil", ["--enable", "gil"], 0.95),
    ("offcpu", ["--enable", "offcpu"], 0.95),
    ("py_stack", ["--enable", "py_stack"], None),
    ("every tracker (the default)", [], 0.90),
]
# One convoy run's loops/s moves by several % from run to run on this VM,
# as much as the effect measured: the goal rows take at least this many pairs.
CONVOY_MIN_PAIRS = 8


def rows_convoy(env):
    """500 threads queueing for the GIL (bench/workloads/gil_convoy.py): the
    target's throughput with gil, offcpu and py_stack each alone and with
    every tracker; then with py_stack, gil and offcpu, what pyebpf keeps up
    with: events per second by metric (its stdout), events lost (the
    summary's ring-buffer-full counts) and its CPU per event; then the same
    with every GIL wait reported, for the highest rate this target makes."""
    args = (CONVOY_THREADS, env.args.convoy_seconds)

    def traced(options):
        with tempfile.TemporaryFile("w+") as out:
            result, p = traced_workload(env, options, "gil_convoy.py", *args, out=out, drain_s=0.5,
                                        steady_after_s=CONVOY_WARMUP_S)
            out.seek(0)
            events = [json.loads(line) for line in out if line.strip()]
        result["metrics"] = collections.Counter(e.get("metric", "?") for e in events)
        result["cpu_s"], result["lost"] = p.cpu_s, benchlib.lost_events(p.summary)
        (t0, cpu0), (t1, cpu1) = p.steady
        result["steady_events"] = sum(1 for e in events if t0 * 1e6 <= e.get("ts_us", 0) < t1 * 1e6)
        result["steady_cpu_s"] = cpu1 - cpu0
        return result

    def untraced():
        return traced_workload(env, None, "gil_convoy.py", *args)[0]

    rows = []
    for what, options, goal in CONVOY_GOALS:
        pairs = max(env.args.pairs, CONVOY_MIN_PAIRS) if goal else env.args.pairs
        without, with_ = paired(pairs, untraced, lambda: traced_workload(env, options, "gil_convoy.py", *args)[0])
        rows.append(throughput_row("GIL convoy (%d threads), the target's work, %s" % (CONVOY_THREADS, what),
                                   "loops/s", [r["loops_per_s"] for r in without], [r["loops_per_s"] for r in with_],
                                   goal, headline=goal is not None))
    label = "GIL convoy (%d threads), py_stack gil offcpu" % CONVOY_THREADS
    without, with_ = paired(env.args.pairs, untraced, lambda: traced(CONVOY_OPTIONS))
    rows.append(throughput_row(label + ": the target's work", "loops/s", [r["loops_per_s"] for r in without],
                               [r["loops_per_s"] for r in with_], None))
    rows += pyebpf_keeps_up(label, with_, True)
    every_wait = [traced(CONVOY_OPTIONS + CONVOY_EVERY_WAIT) for _ in range(env.args.pairs)]
    return rows + pyebpf_keeps_up(label + " " + " ".join(CONVOY_EVERY_WAIT), every_wait, False)


# Issue 11: nothing lost at this many events per second.
LOSSLESS_RATE = 20000


def lost_row(what, rate, runs, headline):
    """The most events one of `runs` lost (its "lost"), against the goal of
    none at LOSSLESS_RATE: met only if none was lost at that rate or more."""
    lost = max(r["lost"] for r in runs)
    return Row(what, "events", None, lost, "0 at {:,} events/s".format(LOSSLESS_RATE),
               ok=False if lost else (True if rate >= LOSSLESS_RATE else None), headline=headline)


def pyebpf_keeps_up(label, runs, headline):
    """Rows of pyebpf's CPU, events/s by metric, events lost and events per
    CPU-second over traced convoy runs."""
    rows = [Row(label + ": pyebpf's CPU", "% of a core", None,
                statistics.median(100 * r["cpu_s"] / r["seconds"] for r in runs))]
    for metric in sorted({m for r in runs for m in r["metrics"]}):
        rows.append(Row("%s: %s events emitted" % (label, metric), "events/s", None,
                        statistics.median(r["metrics"][metric] / r["seconds"] for r in runs)))
    rate = statistics.median(sum(r["metrics"].values()) / r["seconds"] for r in runs)
    rows.append(lost_row(label + ": events lost at %.0f events/s (most in one run)" % rate, rate, runs, headline))
    whole = statistics.median(sum(r["metrics"].values()) / max(r["cpu_s"], 1e-3) for r in runs)
    rows.append(Row(label + ": events per CPU-second of pyebpf, whole run (with one-time work)", "events/s", None,
                    whole))
    steady = statistics.median(r["steady_events"] / max(r["steady_cpu_s"], 1e-3) for r in runs)
    rows.append(Row(label + ": events per CPU-second of pyebpf, sustained (from %g s in)" % CONVOY_WARMUP_S,
                    "events/s", None, steady, ">= 100,000", ok=steady >= 100000, headline=headline))
    return rows


BURST_THREADS = 6
BURST_OPTIONS = CONVOY_OPTIONS + ["--offcpu-min-total-ms", "0"]


def rows_burst(env):
    """Every sleep an off_cpu event (--offcpu-min-total-ms 0) of a target
    already making ~25,000 sleeps a second (bench/workloads/sleepers.py, 6
    threads) when pyebpf attaches: the events lost (ring buffer full) from
    the first moment on, while the kernel symbols offcpu needs still load."""
    runs = []
    for _ in range(env.args.pairs):
        w = benchlib.start_workload(PYTHON, "sleepers.py", BURST_THREADS, env.args.convoy_seconds + 2)
        result = {}
        runner = threading.Thread(target=lambda: result.update(benchlib.workload_result(w)))
        runner.start()  # the burst is on before pyebpf starts
        with tempfile.TemporaryFile("w+") as out:
            with with_pyebpf(env, BURST_OPTIONS, w.pid, out) as p:
                t0 = time.monotonic()
                runner.join()
                seconds = time.monotonic() - t0
                time.sleep(0.5)
            out.seek(0)
            events = sum(1 for line in out if '"metric":"off_cpu"' in line)
        runs.append({"rate": events / seconds, "lost": benchlib.lost_events(p.summary), "cpu": p.cpu_s / seconds})
    label = "Sleeps burst (%d threads) at attach, py_stack gil offcpu --offcpu-min-total-ms 0" % BURST_THREADS
    rate = statistics.median(r["rate"] for r in runs)
    return [Row(label + ": pyebpf's CPU", "% of a core", None, statistics.median(100 * r["cpu"] for r in runs)),
            lost_row(label + ": events lost at %.0f off_cpu events/s (most in one run)" % rate, rate, runs, True)]


def perf_event_prog_totals(pid):
    """(run_time_ns, run_cnt) summed over the perf_event BPF programs whose fds
    process `pid` holds (/proc/PID/fdinfo; kernel.bpf_stats_enabled=1): py_stack's
    sampler is pyebpf's only one, and other pyebpf runs' programs are not counted."""
    ns = runs = 0
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if info.get("prog_type", "").strip() == "7":  # BPF_PROG_TYPE_PERF_EVENT
            ns += int(info["run_time_ns"])
            runs += int(info["run_cnt"])
    return ns, runs


STACK_DEPTH = 50
# The sampler's fixed part: the module's frame and the spinning function.
SHALLOW_DEPTH = 2


def sampler_costs(env, depth, python=PYTHON, root=None):
    """Per run of deep_stack.py `depth` frames deep under py_stack: (BPF time
    per sample with other tasks' runs taken out, the same not taken out, BPF
    time per run on other tasks' ticks), in us."""
    per_sample, upper, other_run = [], [], []
    with benchlib.bpf_stats():
        for _ in range(env.args.pairs):
            w = benchlib.start_workload(python, "deep_stack.py", depth, env.args.seconds, root=root)
            with with_pyebpf(env, ["--enable", "py_stack"], w.pid) as p:
                ns0, runs0 = perf_event_prog_totals(p.pid)
                time.sleep(1)
                ns1, runs1 = perf_event_prog_totals(p.pid)
                w.stdin.write("GO\n")
                w.stdin.flush()
                w.stdout.readline()  # RESULT: it spun and now waits, idle and alive (pyebpf ends with it)
                ns2, runs2 = perf_event_prog_totals(p.pid)
                w.stdin.close()
                w.wait(10)
            samples = int(re.search(r"py_stack: (\d+) samples of target threads", p.summary).group(1))
            if not samples or runs1 == runs0:
                continue  # no stats: another process turned kernel.bpf_stats_enabled off meanwhile
            other_run.append((ns1 - ns0) / (runs1 - runs0) / 1000)
            upper.append((ns2 - ns1) / samples / 1000)
            per_sample.append(((ns2 - ns1) - (runs2 - runs1 - samples) * other_run[-1] * 1000) / samples / 1000)
    return per_sample, upper, other_run


def rows_py_stack(env):
    """BPF run time of py_stack's sampler per sample of a thread 50 Python
    frames deep, each a function of its own (bench/workloads/deep_stack.py: the
    walker reads a code object once per walk, so recursion would cost less),
    with kernel.bpf_stats_enabled=1 for the row only. The sampler also runs on
    every clock tick of every other task, and returns early there: the target
    waits idle for a second first, to measure that early return's cost per
    run, which is then taken out of the busy phase's total for the runs that
    were not samples of the target. The same at 2 frames deep shows the part
    of a sample that does not depend on the stack: at the default frequency
    each sample finds the caches cold after 10 ms of the target's own work.
    The 50-deep stack again under Debian sid's CPython 3.14, which counts the
    code objects it frees: there the walker reads a code object once until
    one is freed, not once per sample (bpf/python.bpf.h)."""
    per_sample, upper, other_run = sampler_costs(env, STACK_DEPTH)
    if not per_sample:
        return [Row("py_stack BPF time per sample: no run had bpf_stats (another process turned them off?)", "us")]
    what = "py_stack BPF time per sample, %d-deep Python stack, a function per frame" % STACK_DEPTH
    row = Row(what, "us", None, statistics.median(per_sample), "<= 4 us", headline=True)
    row.ok = row.with_ <= 4
    rows = [row, Row(what + ", other tasks' runs not taken out (upper bound)", "us", None, statistics.median(upper)),
            Row("py_stack BPF time per run on other tasks' clock ticks (early return)", "us", None,
                statistics.median(other_run))]
    shallow = sampler_costs(env, SHALLOW_DEPTH)[0]
    if shallow:
        rows.append(Row("py_stack BPF time per sample, %d-deep Python stack (the part any stack pays)" % SHALLOW_DEPTH,
                        "us", None, statistics.median(shallow)))
    what = "%s, CPython 3.14 (Debian sid, chroot): code objects remembered across samples" % what
    if not os.path.exists(SID_ROOT + SID_PYTHON):
        return rows + [Row(what + ": no %s in %s (tools/install-sid-root)" % (SID_PYTHON, SID_ROOT), "us")]
    remembered = sampler_costs(env, STACK_DEPTH, SID_PYTHON, SID_ROOT)[0]
    if remembered:
        row = Row(what, "us", None, statistics.median(remembered), "<= 4 us")
        row.ok = row.with_ <= 4
        rows.append(row)
    return rows


# About 3 s of bench/workloads/cpu_bound.py under Debian's 3.11 here.
CPU_BOUND_ITERATIONS = 1000000
# Issue 31: the target's slowdown under py_stack at each rate, at most.
SAMPLE_RATE_GOALS = ((99, 1.01), (999, 1.03))
# CPython's own sampling profiler ("Tachyon", python3.15 -m profiling.sampling),
# from Debian sid's package, at its default rate.
TACHYON_PYTHON = "/usr/bin/python3.15"
TACHYON_HZ = 1000


def cpu_bound_runs(env, options, python=PYTHON, root=None):
    """paired() runs of bench/workloads/cpu_bound.py (which never imports
    threading) without and with pyebpf `options`; a traced run's RESULT gets
    pyebpf's CPU seconds (from its start to its end) and its samples."""
    def run(opts):
        result, p = traced_workload(env, opts, "cpu_bound.py", CPU_BOUND_ITERATIONS, python=python, root=root)
        if p:
            result["pyebpf_cpu_s"] = p.cpu_s
            result["samples"] = int(re.search(r"py_stack: (\d+) samples", p.summary).group(1))
        return result

    return paired(env.args.pairs, lambda: run(None), lambda: run(options))


def tachyon_run(env):
    """One run of cpu_bound.py under sid's CPython 3.15 (chroot) sampled by its
    own profiler at TACHYON_HZ, every thread, CPU mode: the RESULT, with the
    profiler's CPU seconds while the target ran."""
    w = benchlib.start_workload(TACHYON_PYTHON, "cpu_bound.py", CPU_BOUND_ITERATIONS, root=SID_ROOT)
    with tempfile.TemporaryDirectory(prefix="pyebpf-tachyon-", dir=os.path.join(SID_ROOT, "tmp")) as tmp:
        out = os.path.join("/", os.path.relpath(tmp, SID_ROOT), "profile.collapsed")
        t = subprocess.Popen(["chroot", SID_ROOT, TACHYON_PYTHON, "-m", "profiling.sampling", "attach", "-a",
                              "--mode", "cpu", "-r", str(TACHYON_HZ), "--collapsed", "-o", out, str(w.pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(SETTLE_S)
        cpu0 = benchlib.cpu_seconds(t.pid)
        result = benchlib.workload_result(w)  # returns once the target exited
        result["profiler_cpu_s"] = benchlib.cpu_seconds(t.pid) - cpu0
        try:
            t.wait(60)
        except subprocess.TimeoutExpired:
            t.kill()
            t.wait()
    return result


def rows_cpu_bound(env):
    """A CPU-bound target that never imports threading (bench/workloads/
    cpu_bound.py, n-body and dict/str work, fixed work): its wall time under
    py_stack at 99 and 999 Hz (the sampler runs in its context at each
    sample), and pyebpf's CPU per sample at 999 Hz (names, lines and strings
    come from caches: no per-sample read of the target). Then the same target
    under Debian sid's CPython 3.15 (chroot), side by side with CPython's own
    sampling profiler (Tachyon: attach -a --mode cpu) at 1 kHz: each
    profiler's CPU in % of a core while the target ran (pyebpf's counted
    from its start to its end, so over-counted), and the target's slowdown."""
    rows = []
    for hz, goal in SAMPLE_RATE_GOALS:
        without, with_ = cpu_bound_runs(env, ["--enable", "py_stack", "--pystack-frequency", str(hz)])
        what = "CPU-bound target without threading, py_stack at %d Hz" % hz
        rows.append(ratio_row(what + ": its wall time", "s", [r["wall"] for r in without], [r["wall"] for r in with_],
                              goal, headline=True))
        if hz == 999:
            row = Row(what + ": pyebpf's CPU per sample", "us", None,
                      statistics.median(1e6 * r["pyebpf_cpu_s"] / max(r["samples"], 1) for r in with_), "<= 30 us",
                      headline=True)
            row.ok = row.with_ <= 30
            rows.append(row)
    what = "CPU-bound target, CPython 3.15 (Debian sid, chroot)"
    if not os.path.exists(SID_ROOT + TACHYON_PYTHON):
        return rows + [Row(what + ": no %s in %s (tools/install-sid-root)" % (TACHYON_PYTHON, SID_ROOT), "")]
    untraced = lambda: traced_workload(env, None, "cpu_bound.py", CPU_BOUND_ITERATIONS, python=TACHYON_PYTHON,
                                       root=SID_ROOT)[0]
    without, tachyon = paired(env.args.pairs, untraced, lambda: tachyon_run(env))
    rows.append(ratio_row(what + ", CPython's own sampler at %d Hz: its wall time" % TACHYON_HZ, "s",
                          [r["wall"] for r in without], [r["wall"] for r in tachyon], 1.03))
    without, ours = cpu_bound_runs(env, ["--enable", "py_stack", "--pystack-frequency", "999"], TACHYON_PYTHON,
                                   SID_ROOT)
    rows.append(ratio_row(what + ", pyebpf py_stack at 999 Hz: its wall time", "s", [r["wall"] for r in without],
                          [r["wall"] for r in ours], 1.03))
    theirs = statistics.median(100 * r["profiler_cpu_s"] / r["wall"] for r in tachyon)
    rows.append(Row(what + ": CPython's own sampler's CPU at %d Hz" % TACHYON_HZ, "% of a core", None, theirs))
    row = Row(what + ": pyebpf's CPU at 999 Hz", "% of a core", None,
              statistics.median(100 * r["pyebpf_cpu_s"] / r["wall"] for r in ours),
              "<= half of CPython's sampler (%.1f %%)" % (theirs / 2), headline=True)
    row.ok = row.with_ <= theirs / 2
    return rows + [row]


def rows_top(env):
    """pyebpf top's own cost: pyebpf's CPU (% of a core while the target ran)
    with py_stack at 999 Hz on the CPU-bound target, as a normal run and as
    `pyebpf top` redrawing every second (text snapshots: stdout is no
    terminal here; the terminal view draws the same lines through ncurses)."""
    options = ["--enable", "py_stack", "--pystack-frequency", "999"]

    def run(opts):
        result, p = traced_workload(env, opts, "cpu_bound.py", CPU_BOUND_ITERATIONS)
        result["pyebpf_cpu"] = 100 * p.cpu_s / result["wall"]
        return result

    normal, top = paired(env.args.pairs, lambda: run(options), lambda: run(["top"] + options))
    return [paired_row("CPU-bound target, py_stack at 999 Hz, a normal run vs pyebpf top: pyebpf's CPU",
                       "% of a core", [r["pyebpf_cpu"] for r in normal], [r["pyebpf_cpu"] for r in top])]


# A process that is not a target, starting children: argv[1] "fork" (fork,
# _exit(0), waitpid) or "exec" (fork, execve /bin/true, waitpid), argv[2]
# times per burst; prints the fastest burst's ns per child. CPU time of the
# process and its reaped children (getrusage), not wall time: the lifecycle
# hooks run in the parent (fork) or the child (exec, exit), so both count,
# while waiting for a CPU behind other work on the machine does not.
FORKER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static double cpu_ns(void)
{
	struct rusage self, children;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	return 1e9 * (self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
		      children.ru_stime.tv_sec) +
	       1e3 * (self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
		      children.ru_stime.tv_usec);
}

int main(int argc, char **argv)
{
	char *true_argv[] = { "/bin/true", NULL };
	int exec_true = argc > 1 && strcmp(argv[1], "exec") == 0;
	long n = argc > 2 ? atol(argv[2]) : 0;
	double best = 0;

	if (n < 1)
		return 1;
	for (int b = 0; b < 5; b++) {
		double t0 = cpu_ns(), ns;
		for (long i = 0; i < n; i++) {
			int status;
			pid_t pid = fork();
			if (pid == 0) {
				if (exec_true)
					execve(true_argv[0], true_argv, environ);
				_exit(0);
			}
			if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
				return 1;
		}
		ns = (cpu_ns() - t0) / n;
		if (b == 0 || ns < best)
			best = ns;
	}
	printf("%.0f\n", best);
	return 0;
}
"""


def rows_children(env):
    """What the host-wide lifecycle hooks (tp_btf sched_process_fork, exec,
    exit) cost a process that is not a target, pyebpf tracing the demo app
    with its default trackers."""
    rows = []
    for mode, n, what in (("fork", env.args.forks, "fork + exit + waitpid"),
                          ("exec", env.args.forks // 4, "fork + execve /bin/true + waitpid")):
        def measure():
            out = subprocess.run([env.forker, mode, str(n)], check=True, capture_output=True, text=True)
            return float(out.stdout)

        without, with_ = untraced_pairs(env, measure)
        rows.append(ratio_row("%s by an untraced process, all trackers" % what, "CPU ns/child", without, with_, 1.03,
                              True))
    return rows
