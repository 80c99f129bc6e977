"""Two threads make cyclic garbage (automatic collections triggered by their
allocations), then the main thread calls gc.collect(0), (1) and (2). Every
collection is recorded with gc.callbacks: thread, generation, wall time and
thread CPU time between the "start" and "stop" phases, and info's collected
and uncollectable counts.

Automatic collection is disabled until GO and again before RESULT, so the
recorded collections are exactly those pyebpf can see while it traces.

argv: seconds of churn, live tracked objects (they make full collections
long).
"""
import gc
import sys
import threading
import time

from wl_common import line_of, linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
LIVE = int(sys.argv[2]) if len(sys.argv) > 2 else 100000

gc.disable()
live = [[i] for i in range(LIVE)]  # survives every collection
gc.collect()  # promotes it to generation 2 before pyebpf attaches
records = []
starts = {}
phase_of_run = "churn"  # "explicit" while explicit_collections() runs


def on_gc(phase, info):
    # Clocks read last at "start" and first at "stop", so the window is as
    # close as Python can get to the collection itself.
    if phase == "start":
        tid = threading.get_native_id()
        cpu = time.thread_time()
        starts[tid] = (info["generation"], time.time(), cpu, time.perf_counter())
    else:
        wall_end = time.perf_counter()
        cpu_end = time.thread_time()
        tid = threading.get_native_id()
        generation, epoch, cpu, wall = starts.pop(tid)
        records.append({
            "tid": tid,
            "thread": threading.current_thread().name,
            "generation": generation,
            "epoch_us": int(epoch * 1e6),
            "wall_ms": (wall_end - wall) * 1e3,
            "cpu_ms": (cpu_end - cpu) * 1e3,
            "collected": info["collected"],
            "uncollectable": info["uncollectable"],
            "explicit": phase_of_run == "explicit",
        })


def make_cycles(n):
    for _ in range(n):
        a = []  # LINE:alloc_a
        b = [a]  # LINE:alloc_b
        a.append(b)


def churn(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        make_cycles(5000)


def explicit_collections():
    global phase_of_run
    phase_of_run = "explicit"
    gc.collect(0)  # LINE:collect0
    gc.collect(1)  # LINE:collect1
    gc.collect(2)  # LINE:collect2


ready(tid=native_id())
wait_go()
gc.callbacks.append(on_gc)
gc.enable()
worker = threading.Thread(target=churn, args=(SECONDS,), name="Churner-1")
worker.start()
churn(SECONDS)
worker.join()
explicit_collections()
gc.disable()
gc.callbacks.remove(on_gc)
result(tid=native_id(), worker_tid=worker.native_id, file=__file__, collections=records,
       lines={m: line_of(m) for m in ("alloc_a", "alloc_b", "collect0", "collect1", "collect2")})
linger()
