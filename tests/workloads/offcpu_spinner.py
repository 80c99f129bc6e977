"""A CPU-bound thread pinned to one CPU, alone in its process (no GIL
contention once started), so it never sleeps: it only gets preempted by
whatever else runs on that CPU (the tests pin two of these together).

Starting does involve the GIL: the new thread waits for it while the main
thread finishes Thread.start(), and gives it back once so that start() can
return. So the thread first burns WARMUP_S of CPU, by when the main thread
has long been blocked in join() (which holds no GIL and never wakes), and
only then marks the time from which it never sleeps. Its memory is locked
first (mlockall): a page of the interpreter evicted from the page cache
(the machine building meanwhile) would make the spinner sleep in a major
page fault, a real sleep that pyebpf rightly reports.

Usage: offcpu_spinner.py SECONDS CPU
RESULT {"tid": <the spinning thread>, "cpu_s": <CPU time it burned after the
warm-up>, "steady_us": <epoch us when the warm-up ended>, "steady_end_us": <epoch
us when it stopped spinning>}
"""
import ctypes
import os
import sys
import threading
import time

from wl_common import burn_cpu, linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
CPU = int(sys.argv[2]) if len(sys.argv) > 2 else 0
os.sched_setaffinity(0, {CPU})
MCL_CURRENT, MCL_FUTURE = 1, 2
if ctypes.CDLL(None, use_errno=True).mlockall(MCL_CURRENT | MCL_FUTURE):
    sys.exit("mlockall: " + os.strerror(ctypes.get_errno()))
info = {}


WARMUP_S = 0.2


def cpu_bound():
    info["tid"] = native_id()
    burn_cpu(WARMUP_S)
    info["steady_us"] = int(time.time() * 1e6)
    start = time.thread_time()
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        burn_cpu(0.01)
    # Its exit may sleep: glibc loads libgcc_s at pthread_exit (3.8 ends its
    # threads that way), a file page fault where the disk is busy.
    info["steady_end_us"] = int(time.time() * 1e6)
    info["cpu_s"] = time.thread_time() - start


ready(tid=native_id())
wait_go()
spinner = threading.Thread(target=cpu_bound, name="Spinner")
spinner.start()
spinner.join()
result(**info)
linger()
