"""GIL contention with known threads and measured waits.

A holder thread ("GilHolder") runs pure-Python CPU work in hold_the_gil()
until told to stop, so it gives the GIL up only when forced to, every
sys.getswitchinterval(). Waiter threads ("Waiter-0", ...) repeatedly block in
time.sleep() (which releases the GIL) and measure, with perf_counter around
the call, how much longer than the sleep it took them to run Python again:
that excess is the time they waited to take the GIL back (plus the sleep's own
small overshoot). A long switch interval makes each wait long next to that
overshoot.

argv: iterations per waiter, switch interval (s), waiters, "early" to start the
holder before READY (pyebpf then finds it among existing threads) or "late".
"""
import os
import sys
import threading
import time

from wl_common import line_of, linger, native_id, ready, result, wait_go

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
INTERVAL = float(sys.argv[2]) if len(sys.argv) > 2 else 0.01
WAITERS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
EARLY = (sys.argv[4] if len(sys.argv) > 4 else "late") == "early"
SLEEP = 0.002

stop = threading.Event()
all_started = threading.Barrier(WAITERS)
ids = {}
waited = {}
sleeps = {}
runq = {}
rt = {}


def hold_the_gil():
    x = 0
    while not stop.is_set():
        for i in range(2000):
            x += i
    return x


def holder():
    ids["GilHolder"] = native_id()
    hold_the_gil()


def runqueue_ms():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e6


def realtime():
    """Run this thread under SCHED_FIFO where allowed (root): a waiter then gets
    a CPU the moment its sleep ends even on a busy machine, so the time it
    measures is the GIL wait, not a run-queue delay before it asks for the GIL.
    It blocks almost all the time, so it cannot starve anything."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        return True
    except (AttributeError, OSError):
        return False


def wait_for_gil(name):
    ids[name] = native_id()
    rt[name] = realtime()
    # Contend together: without this a waiter can be kept from starting
    # until the others are done.
    all_started.wait()
    rq0 = runqueue_ms()
    total = 0.0
    for _ in range(ITERATIONS):
        t0 = time.perf_counter()
        time.sleep(SLEEP)  # LINE:sleep
        total += time.perf_counter() - t0 - SLEEP
    waited[name] = total * 1000.0
    runq[name] = runqueue_ms() - rq0
    sleeps[name] = ITERATIONS


sys.setswitchinterval(INTERVAL)
holder_thread = threading.Thread(target=holder, name="GilHolder")
if EARLY:
    holder_thread.start()
ready(tid=native_id(), file=__file__, sleep_line=line_of("sleep"))
wait_go()
if not EARLY:
    holder_thread.start()
while "GilHolder" not in ids:
    time.sleep(0.001)
waiters = [threading.Thread(target=wait_for_gil, args=("Waiter-%d" % i,), name="Waiter-%d" % i)
           for i in range(WAITERS)]
for t in waiters:
    t.start()
for t in waiters:
    t.join()
stop.set()
holder_thread.join()
result(ids=ids, waited_ms=waited, sleeps=sleeps, runq_ms=runq, realtime=rt)
linger()
