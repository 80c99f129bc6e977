"""Makes cyclic garbage on one thread and measures, itself, how many
collections ran and what share of the process's CPU they took: the ground
truth of pyebpf's default gc mode (counters and samples, no probes).

argv: seconds of churn; collections per second to aim at (0: as many as the
allocations trigger, thousands a second); gen-0 threshold (objects).

Collections happen only between GO and RESULT (automatic collection is off
before and after), so the interpreter's counters move only while pyebpf
watches. The gc.callbacks time each collection with the thread's CPU clock:
clocks read last at "start" and first at "stop", so the callbacks' own cost
(two clock reads) stays outside the window, as far as Python can get.

The rest of the callbacks' cost still runs inside the collection, where a
sampler rightly counts it as collecting: at thousands of collections a second
about a third of a point of the process's CPU (~0.8 us per collection). The
workload measures it before it reports ready (the same callback called in
pairs, outside any collection, before pyebpf samples) and reports it as
callback_cpu_s, so a test can add it to gc_cpu_s.

RESULT {"stats": [{collections, collected, uncollectable} per generation, the
change over the run], "collections", "gc_cpu_s", "callback_cpu_s",
"gc_wall_s", "cpu_s", "tid"}
"""
import gc
import sys
import time

from wl_common import linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
RATE = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
THRESHOLD = int(sys.argv[3]) if len(sys.argv) > 3 else 2000

gc.disable()
gc.collect()
gc.set_threshold(THRESHOLD)
live = [[i] for i in range(20000)]  # older generations have something to look at
timing = {"cpu": 0, "wall": 0, "count": 0}
started = [0, 0]


def on_gc(phase, info):
    if phase == "start":
        started[1] = time.perf_counter_ns()
        started[0] = time.thread_time_ns()
    else:
        cpu = time.thread_time_ns()
        wall = time.perf_counter_ns()
        timing["cpu"] += cpu - started[0]
        timing["wall"] += wall - started[1]
        timing["count"] += 1


def callback_cost_outside_window(pairs=20000):
    """CPU seconds per start/stop pair that the pair's own window misses."""
    saved = dict(timing)
    timing["cpu"] = 0
    begin = time.thread_time_ns()
    for _ in range(pairs):  # the interpreter builds an info dict per call too
        on_gc("start", {"generation": 0, "collected": 0, "uncollectable": 0})
        on_gc("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    total = time.thread_time_ns() - begin
    missed = total - timing["cpu"]
    timing.update(saved)
    return max(missed, 0) / pairs / 1e9


def make_cycles(n):
    for _ in range(n):
        a = []
        b = [a]
        a.append(b)


def churn():
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        make_cycles(THRESHOLD)  # about one gen-0 collection
        if RATE:
            time.sleep(1.0 / RATE)


per_pair = callback_cost_outside_window()  # before pyebpf samples anything
ready(tid=native_id())
wait_go()
before = gc.get_stats()
cpu_before = time.process_time()
gc.callbacks.append(on_gc)
gc.enable()
churn()
gc.disable()
gc.callbacks.remove(on_gc)
cpu = time.process_time() - cpu_before
after = gc.get_stats()
stats = [{k: after[g][k] - before[g][k] for k in ("collections", "collected", "uncollectable")} for g in range(3)]
result(tid=native_id(), stats=stats, collections=timing["count"], gc_cpu_s=timing["cpu"] / 1e9,
       callback_cpu_s=per_pair * timing["count"], gc_wall_s=timing["wall"] / 1e9, cpu_s=cpu)
linger()
