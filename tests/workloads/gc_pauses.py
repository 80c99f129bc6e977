"""Makes cyclic garbage (automatic collections, triggered by its allocations)
and calls gc.collect() explicitly; records every collection with gc.callbacks:
thread, generation, wall time and thread CPU time between the "start" and
"stop" phases, and info's collected and uncollectable counts. `sw` holds the
thread's context-switch count (voluntary + involuntary) at the end of its
previous "stop" callback, at "start", at "stop" and at the end of this "stop"
callback: equal counts prove the thread never left its CPU in between.
`stack` is the Python stack the collection ran in, as pyebpf prints stacks
("func (file:line);..." root first): the frames below the callback's.

Phases, each recorded with its collections:
  "single"    the main thread alone makes garbage
  "threads"   the main thread and "Churner-1" make garbage (only if threads == 2)
  "explicit"  gc.collect(0), (1), (2), then `full` more gc.collect(2)

Automatic collection is disabled until GO and again before RESULT, so the
recorded collections are exactly those pyebpf can see while it traces.

argv: seconds of churn, live tracked objects (they make full collections
long), threads (1 or 2), full (extra gc.collect(2) calls).

GC_MIN_QUIET=N in the environment: the "single" phase goes on past its
seconds (at most 10 times as long) until N collections were quiet: `sw`
equal at the previous stop, start and stop, and with GC_QUIET_NEXT=1 also
unchanged from this stop to the start of the thread's next collection (the
tests judge durations on those only; on a busy machine few are).
"""
import gc
import os
import resource
import sys
import threading
import time

from wl_common import line_of, linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
LIVE = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
FULL = int(sys.argv[4]) if len(sys.argv) > 4 else 0

gc.disable()
live = [[i] for i in range(LIVE)]  # survives every collection
gc.collect()  # promotes it to generation 2 before pyebpf attaches
records = []
starts = {}
last_switches = {}  # tid -> switch count at the end of its last "stop" callback
phase = "single"
MIN_QUIET = int(os.environ.get("GC_MIN_QUIET", "0"))
QUIET_NEXT = os.environ.get("GC_QUIET_NEXT") == "1"
quiet = 0
awaiting_next = {}  # tid -> sw[3] of its last collection, quiet so far (QUIET_NEXT)


def switches():
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_nvcsw + usage.ru_nivcsw


def mark_switches():
    last_switches[threading.get_native_id()] = switches()


def stack_of(frame):
    frames = []
    while frame is not None:
        code = frame.f_code
        name = getattr(code, "co_qualname", code.co_name)  # pyebpf prints co_qualname from 3.11 on
        frames.append("%s (%s:%s)" % (name, code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return ";".join(reversed(frames))


def on_gc(gc_phase, info):
    # Clocks read last at "start" and first at "stop", so the window is as
    # close as Python can get to the collection itself.
    if gc_phase == "start":
        tid = threading.get_native_id()
        stack = stack_of(sys._getframe(1))
        sw = switches()
        cpu = time.thread_time()
        starts[tid] = (info["generation"], stack, sw, time.time(), cpu, time.perf_counter())
    else:
        wall_end = time.perf_counter()
        cpu_end = time.thread_time()
        sw_stop = switches()
        tid = threading.get_native_id()
        generation, stack, sw_start, epoch, cpu, wall = starts.pop(tid)
        record = {
            "phase": phase,
            "tid": tid,  # "thread" (its name) is filled in at the end, see below
            "generation": generation,
            "epoch_us": int(epoch * 1e6),
            "wall_ms": (wall_end - wall) * 1e3,
            "cpu_ms": (cpu_end - cpu) * 1e3,
            "collected": info["collected"],
            "uncollectable": info["uncollectable"],
            "sw": [last_switches.get(tid, -1), sw_start, sw_stop],
            "stack": stack,
        }
        records.append(record)
        record["sw"].append(switches())
        last_switches[tid] = record["sw"][3]
        count_quiet(tid, record["sw"])


def count_quiet(tid, sw):
    global quiet
    if QUIET_NEXT and awaiting_next.pop(tid, None) == sw[1]:
        quiet += 1
    if sw[0] == sw[1] == sw[2]:
        if QUIET_NEXT:
            awaiting_next[tid] = sw[3]
        else:
            quiet += 1


def make_cycles(n):
    for _ in range(n):
        a = []  # LINE:alloc_a
        b = [a]  # LINE:alloc_b
        a.append(b)


def churn(seconds):
    mark_switches()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        make_cycles(5000)


def explicit_collections():
    mark_switches()
    gc.collect(0)  # LINE:collect0
    gc.collect(1)  # LINE:collect1
    gc.collect(2)  # LINE:collect2
    for _ in range(FULL):
        gc.collect(2)  # LINE:collect_full


ready(tid=native_id())
wait_go()
gc.callbacks.append(on_gc)
gc.enable()
churn(SECONDS / THREADS)
give_up = time.monotonic() + 9 * SECONDS / THREADS
while quiet < MIN_QUIET and time.monotonic() < give_up:
    make_cycles(5000)
worker = None
if THREADS == 2:
    phase = "threads"
    worker = threading.Thread(target=churn, args=(SECONDS / 2,), name="Churner-1")
    worker.start()
    churn(SECONDS / 2)
    worker.join()
phase = "explicit"
explicit_collections()
gc.disable()
gc.callbacks.remove(on_gc)
# Names by tid, once every thread is known: a collection can run in a thread
# still starting, before threading has registered it, where current_thread()
# would invent a "Dummy-1" (and register it, under the thread's ident).
names = {native_id(): "MainThread"}
if worker:
    names[worker.native_id] = worker.name
for record in records:
    record["thread"] = names.get(record["tid"], "?")
result(tid=native_id(), worker_tid=worker.native_id if worker else None, file=__file__, collections=records,
       lines={m: line_of(m) for m in ("alloc_a", "alloc_b", "collect0", "collect1", "collect2", "collect_full")})
linger()
